/**
 * The lifecycle shared by every piece of queued work that calls a platform: taken by a worker,
 * completed or failed, retried automatically a few times, then dead until someone retries it. An
 * attempt whose worker was lost counts as a failed attempt (LOSE); work whose queue message can no
 * longer move it is abandoned to dead (ABANDON); work that must not be attempted at all is skipped
 * (SKIP, terminal).
 * Each kind of work names the id it keeps on success (`resultKey`). The kinds themselves (table,
 * queue, what an attempt does) are defined in their feature folders (src/sync-jobs/kind.ts, …)
 * and listed in src/workers/kinds.ts.
 */

import { assign, createActor, initialTransition, not, setup, type AnyStateMachine, type SnapshotFrom } from 'xstate';
import type { AttemptStatus } from '../contract/enums.ts';

/** Automatic retries after the first failed attempt, so a job that always fails runs 4 times. */
export const MAX_AUTO_RETRIES = 3;

export type { AttemptStatus };

/** What every kind of attempt keeps, whatever it produces. */
export interface AttemptBookkeeping {
  attempts: number;
  retriesLeft: number;
  errorMessage: string | null;
  completedAt: string | null;
  failedAt: string | null;
  deadAt: string | null;
}

export type AttemptContext<TResultKey extends string> = AttemptBookkeeping & Record<TResultKey, string | null>;

/** The error a lost attempt (LOSE) records. */
export const WORKER_LOST_ERROR = 'worker lost: the attempt ended without reporting an outcome';

/**
 * `at` is the ISO-8601 time of the event: the machine never reads a clock.
 * - LOSE: the attempt in progress was lost (its worker died, or its outcome could not be recorded):
 *   a failed attempt like any other, so it spends a retry, and the work dies when none is left.
 * - ABANDON: the work can no longer be moved by its queue (its message was delivered as often as
 *   the policy allows without an outcome): dead at once, with `error` saying why; from `processing`
 *   the attempt in progress counts as failed (`failedAt` too).
 * - SKIP: the work must not be attempted (e.g. tracking without a number for a platform that needs
 *   one): skipped, terminal, `reason` kept as its error message; never retried.
 * - VOID: the work is no longer wanted before it succeeded (a sync job whose order was cancelled
 *   before it was placed): completed at once with no result, terminal, so it is never attempted
 *   again and a retry of it is refused. Not from `processing`: an attempt in flight finishes first.
 */
export type AttemptEvent<TResultKey extends string> =
  | { type: 'TAKE'; at: string }
  | ({ type: 'SUCCEED'; at: string } & Record<TResultKey, string>)
  | { type: 'FAIL'; error: string; at: string }
  | { type: 'LOSE'; at: string }
  | { type: 'ABANDON'; error: string; at: string }
  | { type: 'SKIP'; reason: string; at: string }
  | { type: 'VOID'; at: string }
  | { type: 'RETRY'; at: string };

/**
 * What a row keeps: the status and the context are the machine's whole state (it is flat, with no
 * children or history), so the snapshot is rebuilt from them (`resolveState`) and never stored.
 */
export interface PersistedAttempt<TResultKey extends string> {
  status: AttemptStatus;
  context: AttemptContext<TResultKey>;
}

export interface AttemptState<TResultKey extends string> extends PersistedAttempt<TResultKey> {
  /** XState's snapshot of this state (serialisable: `JSON.stringify` gives what `resolveState` takes). */
  snapshot: unknown;
}

/**
 * Whether dead work died of a failed attempt: its last automatic one failed or was lost, or the
 * attempt in progress was abandoned with it. The FAIL or LOSE records `failedAt` and the eventless
 * move to `dead` records `deadAt`, both the event's `at`, as ABANDON does from `processing`; an
 * ABANDON of work waiting for an attempt records only `deadAt`. Compared as instants (a row keeps dates).
 */
export function diedOfFailedAttempt(state: { status: AttemptStatus; failedAt?: string | Date | null; deadAt?: string | Date | null }): boolean {
  if (state.status !== 'dead' || !state.failedAt || !state.deadAt) return false;
  return new Date(state.failedAt).getTime() === new Date(state.deadAt).getTime();
}

/** Exponential backoff before the next automatic retry: base, 2 × base, 4 × base. */
export function nextRetryDelayMs(baseDelayMs: number, context: Pick<AttemptBookkeeping, 'retriesLeft'>): number {
  const retriesUsed = MAX_AUTO_RETRIES - context.retriesLeft;
  return baseDelayMs * 2 ** retriesUsed;
}

function initialContext<TResultKey extends string>(resultKey: TResultKey): AttemptContext<TResultKey> {
  const bookkeeping: AttemptBookkeeping = {
    attempts: 0,
    retriesLeft: MAX_AUTO_RETRIES,
    errorMessage: null,
    completedAt: null,
    failedAt: null,
    deadAt: null,
  };
  // TypeScript widens a computed key to an index signature, hence the assertion.
  return { ...bookkeeping, [resultKey]: null } as AttemptContext<TResultKey>;
}

function createAttemptMachine<const TResultKey extends string>(id: string, resultKey: TResultKey) {
  return setup({
    types: {
      context: {} as AttemptContext<TResultKey>,
      events: {} as AttemptEvent<TResultKey>,
    },
    guards: {
      hasRetriesLeft: ({ context }) => context.retriesLeft > 0,
    },
    // Function assigners spreading the context, and `event.type` checks rather than assertEvent:
    // xstate's property assigners and assertEvent cannot resolve types with a generic result key.
    actions: {
      countAttempt: assign(({ context }) => ({ ...context, attempts: context.attempts + 1 })),
      spendRetry: assign(({ context }) => ({ ...context, retriesLeft: context.retriesLeft - 1 })),
      recordSuccess: assign(({ context, event }) => {
        if (event.type !== 'SUCCEED') return context;
        return { ...context, errorMessage: null, completedAt: event.at, [resultKey]: event[resultKey] };
      }),
      recordFailure: assign(({ context, event }) => {
        if (event.type === 'LOSE') return { ...context, errorMessage: WORKER_LOST_ERROR, failedAt: event.at };
        if (event.type !== 'FAIL') return context;
        return { ...context, errorMessage: event.error, failedAt: event.at };
      }),
      // Runs on the eventless transition out of `failed`, so the event is the FAIL or LOSE that led there.
      recordDeath: assign(({ context, event }) => ({ ...context, deadAt: event.at })),
      recordAbandonment: assign(({ context, event }) => {
        if (event.type !== 'ABANDON') return context;
        return { ...context, errorMessage: event.error, deadAt: event.at };
      }),
      // The attempt in progress is given up on with the work: it failed (its timeline entry says so).
      recordAbandonedAttempt: assign(({ context, event }) => {
        if (event.type !== 'ABANDON') return context;
        return { ...context, errorMessage: event.error, failedAt: event.at, deadAt: event.at };
      }),
      recordSkip: assign(({ context, event }) => {
        if (event.type !== 'SKIP') return context;
        return { ...context, errorMessage: event.reason };
      }),
      recordVoid: assign(({ context, event }) => ({ ...context, errorMessage: null, completedAt: event.at, [resultKey]: null })),
      resetForManualRetry: assign(({ context }) => ({
        ...context,
        retriesLeft: MAX_AUTO_RETRIES,
        errorMessage: null,
        failedAt: null,
        deadAt: null,
      })),
    },
  }).createMachine({
    id,
    initial: 'pending',
    context: initialContext(resultKey),
    states: {
      pending: {
        on: {
          TAKE: { target: 'processing', actions: 'countAttempt' },
          ABANDON: { target: 'dead', actions: 'recordAbandonment' },
          SKIP: { target: 'skipped', actions: 'recordSkip' },
          VOID: { target: 'completed', actions: 'recordVoid' },
        },
      },
      processing: {
        on: {
          SUCCEED: { target: 'completed', actions: 'recordSuccess' },
          FAIL: { target: 'failed', actions: 'recordFailure' },
          // A message redelivered after its worker died, or a sweep finding the attempt abandoned,
          // is not a new attempt on top of the lost one: the lost one failed.
          LOSE: { target: 'failed', actions: 'recordFailure' },
          ABANDON: { target: 'dead', actions: 'recordAbandonedAttempt' },
        },
      },
      failed: {
        always: { guard: not('hasRetriesLeft'), target: 'dead', actions: 'recordDeath' },
        on: {
          TAKE: { guard: 'hasRetriesLeft', target: 'processing', actions: ['countAttempt', 'spendRetry'] },
          ABANDON: { target: 'dead', actions: 'recordAbandonment' },
          RETRY: { target: 'pending', actions: 'resetForManualRetry' },
          VOID: { target: 'completed', actions: 'recordVoid' },
        },
      },
      dead: {
        on: {
          RETRY: { target: 'pending', actions: 'resetForManualRetry' },
          VOID: { target: 'completed', actions: 'recordVoid' },
        },
      },
      completed: { type: 'final' },
      skipped: { type: 'final' },
    },
  });
}

export type AttemptLifecycle<TResultKey extends string> = ReturnType<typeof createAttemptLifecycle<TResultKey>>;

/**
 * One scope for every transition of a machine. xstate's `transition()` builds a whole actor (and its
 * initial snapshot) on each call, which was most of a job's machine cost on the worker's hot path.
 * These machines only assign to their context: no children, no delays, no actions to execute, so a
 * scope that drops any executable action can be shared, and the transition stays pure.
 */
function inertScope<M extends AnyStateMachine>(machine: M): Parameters<M['transition']>[2] {
  const self = createActor(machine);
  return { self, defer: () => {}, id: '', logger: () => {}, sessionId: '', stopChild: () => {}, system: self.system, emit: () => {}, actionExecutor: () => {} };
}

/** Pure helpers over rows: rebuild the snapshot, ask the machine, return the next row. */
export function createAttemptLifecycle<const TResultKey extends string>(id: string, resultKey: TResultKey) {
  const machine = createAttemptMachine(id, resultKey);
  const scope = inertScope(machine);

  function toState(snapshot: SnapshotFrom<typeof machine>): AttemptState<TResultKey> {
    return { status: snapshot.value, context: snapshot.context, snapshot };
  }

  function restore(persisted: PersistedAttempt<TResultKey>) {
    return machine.resolveState({ value: persisted.status, context: persisted.context });
  }

  return {
    machine,
    resultKey,

    initial(): AttemptState<TResultKey> {
      const [snapshot] = initialTransition(machine);
      return toState(snapshot);
    },

    /** The next state, or null when the machine refuses the event in the current state. */
    apply(persisted: PersistedAttempt<TResultKey>, event: AttemptEvent<TResultKey>): AttemptState<TResultKey> | null {
      const snapshot = restore(persisted);
      if (!snapshot.can(event)) return null;
      return toState(machine.transition(snapshot, event, scope));
    },

    canApply(persisted: PersistedAttempt<TResultKey>, event: AttemptEvent<TResultKey>): boolean {
      return restore(persisted).can(event);
    },
  };
}
