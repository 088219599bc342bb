import { describe, expect, it } from 'vitest';
import { applySyncJobEvent, initialSyncJob, type SyncJobEvent } from './sync-job.machine.ts';
import {
  MAX_AUTO_RETRIES,
  applyCancellationEvent,
  canApplyCancellationEvent,
  initialCancellation,
  reached,
  type CancellationEvent,
  type PersistedCancellation,
} from './cancellation.machine.ts';

const NOW = '2026-11-25T09:05:00.000Z';
const take: CancellationEvent = { type: 'TAKE', at: NOW };
const fail: CancellationEvent = { type: 'FAIL', error: 'platform_a answered 502', at: NOW };
const retry: CancellationEvent = { type: 'RETRY', at: NOW };

function replay(start: PersistedCancellation, sequence: CancellationEvent[]): PersistedCancellation {
  return sequence.reduce((cancellation, event) => {
    const next = applyCancellationEvent(cancellation, event);
    if (!next) throw new Error(`${event.type} refused in ${cancellation.status}`);
    return { status: next.status, context: next.context };
  }, start);
}

describe('cancellation machine', () => {
  it('starts pending without an outcome', () => {
    expect(initialCancellation()).toMatchObject({ status: 'pending', context: { attempts: 0, retriesLeft: MAX_AUTO_RETRIES, outcome: null } });
  });

  it.each(['cancelled', 'not_placed', 'too_late', 'unsupported'] as const)('completes with the outcome reached (%s) and accepts nothing more', (outcome) => {
    const done = replay(initialCancellation(), [take, fail, take, reached(outcome, NOW)]);
    expect(done).toMatchObject({ status: 'completed', context: { attempts: 2, outcome, completedAt: NOW, errorMessage: null } });
    for (const event of [take, fail, retry, { type: 'VOID', at: NOW } as const]) expect(canApplyCancellationEvent(done, event)).toBe(false);
  });

  it('is dead after four failed attempts, and a manual retry brings it back to pending', () => {
    const dead = replay(initialCancellation(), Array.from({ length: MAX_AUTO_RETRIES + 1 }, () => [take, fail]).flat());
    expect(dead).toMatchObject({ status: 'dead', context: { attempts: 4, outcome: null, deadAt: NOW } });
    expect(replay(dead, [retry])).toMatchObject({ status: 'pending', context: { attempts: 4, retriesLeft: MAX_AUTO_RETRIES, deadAt: null } });
  });
});

describe('a sync job voided by its order\'s cancellation', () => {
  const jobTake: SyncJobEvent = { type: 'TAKE', at: NOW };
  const jobFail: SyncJobEvent = { type: 'FAIL', error: 'x', at: NOW };
  const voided: SyncJobEvent = { type: 'VOID', at: NOW };

  it('ends completed with no source order from pending, failed or dead, and is never retried', () => {
    const pending = initialSyncJob();
    const failed = applySyncJobEvent(applySyncJobEvent(pending, jobTake)!, jobFail)!;
    let dead: ReturnType<typeof applySyncJobEvent> = pending;
    for (let i = 0; i <= MAX_AUTO_RETRIES; i++) dead = applySyncJobEvent(applySyncJobEvent(dead!, jobTake)!, jobFail);
    expect(dead!.status).toBe('dead');
    for (const start of [pending, failed, dead!]) {
      const done = applySyncJobEvent(start, voided);
      expect(done).toMatchObject({ status: 'completed', context: { sourceOrderId: null, completedAt: NOW, errorMessage: null } });
      expect(applySyncJobEvent(done!, { type: 'RETRY', at: NOW })).toBeNull();
    }
  });

  it('is refused while an attempt is in flight: it finishes first', () => {
    expect(applySyncJobEvent(applySyncJobEvent(initialSyncJob(), jobTake)!, voided)).toBeNull();
  });
});
