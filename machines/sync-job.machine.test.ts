import { describe, expect, it } from 'vitest';
import {
  MAX_AUTO_RETRIES,
  WORKER_LOST_ERROR,
  applySyncJobEvent,
  canApply,
  initialSyncJob,
  nextRetryDelayMs,
  syncJobMachine,
  type PersistedSyncJob,
  type SyncJobContext,
  type SyncJobEvent,
  type SyncJobState,
} from './sync-job.machine.ts';
import { diedOfFailedAttempt, type AttemptStatus as LifecycleStatus } from './attempt.machine.ts';

/** The shared lifecycle's every state (a sync job never reaches `skipped`, but its machine is the shared one). */
type SyncJobStatus = LifecycleStatus;

const EARLIER = '2026-11-02T09:00:00.000Z';
const NOW = '2026-11-02T09:05:00.000Z';

const fresh: SyncJobContext = {
  attempts: 0,
  retriesLeft: MAX_AUTO_RETRIES,
  errorMessage: null,
  sourceOrderId: null,
  completedAt: null,
  failedAt: null,
  deadAt: null,
};

/** One job in every status, as a row would hold it. */
const jobIn: Record<SyncJobStatus, PersistedSyncJob> = {
  pending: { status: 'pending', context: fresh },
  // Second attempt, still carrying the first attempt's error.
  processing: {
    status: 'processing',
    context: { ...fresh, attempts: 2, retriesLeft: 2, errorMessage: 'supplier returned 503', failedAt: EARLIER },
  },
  completed: {
    status: 'completed',
    context: { ...fresh, attempts: 1, sourceOrderId: '5001', completedAt: EARLIER },
  },
  failed: {
    status: 'failed',
    context: { ...fresh, attempts: 2, retriesLeft: 2, errorMessage: 'supplier returned 503', failedAt: EARLIER },
  },
  dead: {
    status: 'dead',
    context: { ...fresh, attempts: 4, retriesLeft: 0, errorMessage: 'timeout', failedAt: EARLIER, deadAt: EARLIER },
  },
  skipped: { status: 'skipped', context: { ...fresh, errorMessage: 'no tracking number' } },
};

const events = {
  TAKE: { type: 'TAKE', at: NOW },
  SUCCEED: { type: 'SUCCEED', sourceOrderId: '7001', at: NOW },
  FAIL: { type: 'FAIL', error: 'timeout', at: NOW },
  LOSE: { type: 'LOSE', at: NOW },
  ABANDON: { type: 'ABANDON', error: 'abandoned', at: NOW },
  SKIP: { type: 'SKIP', reason: 'nothing to do', at: NOW },
  VOID: { type: 'VOID', at: NOW },
  RETRY: { type: 'RETRY', at: NOW },
} satisfies Record<SyncJobEvent['type'], SyncJobEvent>;

type Outcome = { status: SyncJobStatus; changes: Partial<SyncJobContext> } | 'refused';

const expected: Record<SyncJobStatus, Record<SyncJobEvent['type'], Outcome>> = {
  pending: {
    TAKE: { status: 'processing', changes: { attempts: 1 } },
    SUCCEED: 'refused',
    FAIL: 'refused',
    LOSE: 'refused',
    ABANDON: { status: 'dead', changes: { errorMessage: 'abandoned', deadAt: NOW } },
    SKIP: { status: 'skipped', changes: { errorMessage: 'nothing to do', attempts: 0 } },
    VOID: { status: 'completed', changes: { completedAt: NOW, sourceOrderId: null, errorMessage: null } },
    RETRY: 'refused',
  },
  processing: {
    // A redelivered message is not taken on top of the lost attempt: LOSE first.
    TAKE: 'refused',
    SUCCEED: { status: 'completed', changes: { sourceOrderId: '7001', completedAt: NOW, errorMessage: null } },
    FAIL: { status: 'failed', changes: { errorMessage: 'timeout', failedAt: NOW } },
    LOSE: { status: 'failed', changes: { errorMessage: WORKER_LOST_ERROR, failedAt: NOW, attempts: 2, retriesLeft: 2 } },
    // The attempt in progress fails with it.
    ABANDON: { status: 'dead', changes: { errorMessage: 'abandoned', failedAt: NOW, deadAt: NOW } },
    SKIP: 'refused',
    VOID: 'refused',
    RETRY: 'refused',
  },
  completed: {
    TAKE: 'refused',
    SUCCEED: 'refused',
    FAIL: 'refused',
    LOSE: 'refused',
    ABANDON: 'refused',
    SKIP: 'refused',
    VOID: 'refused',
    RETRY: 'refused',
  },
  failed: {
    TAKE: { status: 'processing', changes: { attempts: 3, retriesLeft: 1 } },
    SUCCEED: 'refused',
    FAIL: 'refused',
    LOSE: 'refused',
    ABANDON: { status: 'dead', changes: { errorMessage: 'abandoned', deadAt: NOW } },
    SKIP: 'refused',
    VOID: { status: 'completed', changes: { completedAt: NOW, sourceOrderId: null, errorMessage: null } },
    RETRY: {
      status: 'pending',
      changes: { retriesLeft: MAX_AUTO_RETRIES, errorMessage: null, failedAt: null, deadAt: null },
    },
  },
  dead: {
    TAKE: 'refused',
    SUCCEED: 'refused',
    FAIL: 'refused',
    LOSE: 'refused',
    ABANDON: 'refused',
    SKIP: 'refused',
    VOID: { status: 'completed', changes: { completedAt: NOW, sourceOrderId: null, errorMessage: null } },
    RETRY: {
      status: 'pending',
      changes: { retriesLeft: MAX_AUTO_RETRIES, errorMessage: null, failedAt: null, deadAt: null },
    },
  },
  skipped: {
    TAKE: 'refused',
    SUCCEED: 'refused',
    FAIL: 'refused',
    LOSE: 'refused',
    ABANDON: 'refused',
    SKIP: 'refused',
    VOID: 'refused',
    RETRY: 'refused',
  },
};

const cases = Object.entries(expected).flatMap(([from, byEvent]) =>
  Object.entries(byEvent).map(([type, outcome]) => ({
    from: from as SyncJobStatus,
    event: events[type as SyncJobEvent['type']],
    outcome,
  })),
);
const allowedCases = cases.flatMap(({ outcome, ...rest }) => (outcome === 'refused' ? [] : [{ ...rest, ...outcome }]));
const refusedCases = cases.filter(({ outcome }) => outcome === 'refused');

function mustApply(job: PersistedSyncJob, event: SyncJobEvent): SyncJobState {
  const next = applySyncJobEvent(job, event);
  if (!next) throw new Error(`${event.type} refused in ${job.status}`);
  return next;
}

/** Feeds events one by one through a JSON round trip, as a worker reading and writing rows does. */
function replay(start: PersistedSyncJob, sequence: SyncJobEvent[]): PersistedSyncJob {
  return sequence.reduce((job, event) => {
    const { status, context } = mustApply(job, event);
    return JSON.parse(JSON.stringify({ status, context })) as PersistedSyncJob;
  }, start);
}

const take = events.TAKE;
const fail = events.FAIL;

describe('sync job machine', () => {
  it('starts pending with no attempts and every retry available', () => {
    const job = initialSyncJob();

    expect(job.status).toBe('pending');
    expect(job.context).toEqual(fresh);
    expect(JSON.parse(JSON.stringify(job.snapshot))).toMatchObject({ value: 'pending', context: fresh });
  });

  it.each(allowedCases)('$from + $event.type -> $status', ({ from, event, status, changes }) => {
    const job = jobIn[from];

    expect(canApply(job, event)).toBe(true);
    expect(applySyncJobEvent(job, event)).toMatchObject({ status, context: { ...job.context, ...changes } });
  });

  it.each(refusedCases)('$from + $event.type is refused', ({ from, event }) => {
    const job = jobIn[from];

    expect(canApply(job, event)).toBe(false);
    expect(applySyncJobEvent(job, event)).toBeNull();
  });

  it('goes straight to dead when the last automatic retry fails', () => {
    const lastRetry: PersistedSyncJob = {
      status: 'processing',
      context: { ...fresh, attempts: 4, retriesLeft: 0, errorMessage: 'timeout', failedAt: EARLIER },
    };

    expect(applySyncJobEvent(lastRetry, fail)).toMatchObject({
      status: 'dead',
      context: { attempts: 4, retriesLeft: 0, errorMessage: 'timeout', failedAt: NOW, deadAt: NOW },
    });
  });

  it('counts a lost attempt as a failed one: a job whose workers keep dying is attempted 4 times, then dead', () => {
    const lose = events.LOSE;
    const job = replay(initialSyncJob(), [take, lose, take, lose, take, lose, take]);
    expect(job).toMatchObject({ status: 'processing', context: { attempts: 4, retriesLeft: 0 } });

    expect(applySyncJobEvent(job, lose)).toMatchObject({
      status: 'dead',
      context: { attempts: 4, retriesLeft: 0, errorMessage: WORKER_LOST_ERROR, failedAt: NOW, deadAt: NOW },
    });
  });

  it('does not take a failed job that has no automatic retry left', () => {
    const exhausted: PersistedSyncJob = { status: 'failed', context: { ...jobIn.failed.context, retriesLeft: 0 } };

    expect(canApply(exhausted, take)).toBe(false);
    expect(canApply(exhausted, events.RETRY)).toBe(true);
  });

  it('attempts a job that always fails 4 times, then marks it dead', () => {
    const seen: SyncJobStatus[] = [];
    let job: PersistedSyncJob = initialSyncJob();
    for (let attempt = 1; attempt <= MAX_AUTO_RETRIES + 1; attempt++) {
      job = replay(job, [take, fail]);
      seen.push(job.status);
    }

    expect(seen).toEqual(['failed', 'failed', 'failed', 'dead']);
    expect(job.context).toMatchObject({ attempts: 4, retriesLeft: 0, errorMessage: 'timeout', deadAt: NOW });
    expect(canApply(job, take)).toBe(false);
  });

  it('grants the automatic retries again after a manual retry and keeps counting attempts', () => {
    const alwaysFails = Array.from({ length: MAX_AUTO_RETRIES + 1 }, () => [take, fail]).flat();
    const dead = replay(initialSyncJob(), alwaysFails);

    const retried = replay(dead, [events.RETRY]);
    expect(retried).toEqual({
      status: 'pending',
      context: { ...dead.context, retriesLeft: MAX_AUTO_RETRIES, errorMessage: null, failedAt: null, deadAt: null },
    });

    expect(replay(retried, alwaysFails)).toMatchObject({ status: 'dead', context: { attempts: 8 } });
  });

  it('completes after a failed attempt, keeping when it failed but not the error', () => {
    const job = replay(initialSyncJob(), [take, fail, take, events.SUCCEED]);

    expect(job).toEqual({
      status: 'completed',
      context: { ...fresh, attempts: 2, retriesLeft: 2, sourceOrderId: '7001', completedAt: NOW, failedAt: NOW },
    });
  });

  it('waits base, 2 × base, then 4 × base before the automatic retries', () => {
    const delays: number[] = [];
    let job: PersistedSyncJob = initialSyncJob();
    for (let failure = 1; failure <= MAX_AUTO_RETRIES; failure++) {
      job = replay(job, [take, fail]);
      delays.push(nextRetryDelayMs(1_000, job.context));
    }

    expect(delays).toEqual([1_000, 2_000, 4_000]);
  });

  it('continues from a row read back from JSON', () => {
    const stored = JSON.stringify(replay(initialSyncJob(), [take, fail]));
    const readBack = JSON.parse(stored) as PersistedSyncJob;

    expect(applySyncJobEvent(readBack, take)).toMatchObject({
      status: 'processing',
      context: { attempts: 2, retriesLeft: 2 },
    });
  });

  it('keeps a snapshot that xstate restores', () => {
    const { snapshot } = mustApply(initialSyncJob(), take);
    const stored = JSON.parse(JSON.stringify(snapshot)) as { value: SyncJobStatus; context: SyncJobContext };

    const restored = syncJobMachine.resolveState(stored);
    expect(restored.value).toBe('processing');
    expect(restored.context.attempts).toBe(1);
    expect(restored.can(events.SUCCEED)).toBe(true);
  });

  it('tells a death by a failed attempt (the last FAIL or LOSE, or one abandoned in progress) from an ABANDON of waiting work', () => {
    const died = (state: PersistedSyncJob) => diedOfFailedAttempt({ status: state.status, ...state.context });
    const failedThrice = replay(initialSyncJob(), [take, fail, take, fail, take, fail, take]);
    expect(died(mustApply(failedThrice, events.FAIL))).toBe(true);
    expect(died(mustApply(failedThrice, events.LOSE))).toBe(true);
    // ABANDON comes later than the failure before it (the sweep gives up on a message long after).
    const later = { ...events.ABANDON, at: '2026-11-02T10:00:00.000Z' };
    expect(died(mustApply(failedThrice, later))).toBe(true);
    const waiting = replay(initialSyncJob(), [take, fail]);
    const abandoned = mustApply(waiting, later);
    expect(abandoned.status).toBe('dead');
    expect(died(abandoned)).toBe(false);
    expect(died(mustApply(jobIn.pending, later))).toBe(false);
    // Read back from a row: the same instants as dates.
    const fromRow = mustApply(failedThrice, events.FAIL).context;
    expect(diedOfFailedAttempt({ status: 'dead', failedAt: new Date(fromRow.failedAt!), deadAt: new Date(fromRow.deadAt!) })).toBe(true);
    expect(died(jobIn.failed)).toBe(false);
  });
});

