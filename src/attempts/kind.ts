import type { AttemptContext, AttemptEvent, AttemptLifecycle, AttemptStatus } from '../../machines/attempt.machine.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import type { Config } from '../config/index.ts';
import type { Orm } from '../db/orm.ts';
import type { Outbox } from '../events/outbox.ts';
import type { Metrics } from '../metrics/index.ts';
import type { SharedPacer } from '../pacing/pacer.ts';
import type { PacedStore } from '../pacing/rates.ts';
import type { Logger } from 'pino';
import type { Created } from '../platforms/types.ts';
import type { SqlStep, Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import { z } from 'zod';
import { MAX_AUTO_RETRIES } from '../../machines/attempt.machine.ts';
import type { Queue, QueueSpec } from '../queue/queue.ts';

/**
 * `turnAt`: the message was postponed to a turn reserved for its row's platform calls
 * (src/pacing/attempt-turns.ts); the worker spends that turn instead of reserving another.
 * `estimatedAt`: the message was postponed beyond its store's booking horizon with an estimate of its
 * turn (nothing reserved); the worker books its turn now, whatever the horizon.
 */
const turnAt = z.string().datetime({ offset: true }).optional();
const estimatedAt = z.string().datetime({ offset: true }).optional();

/**
 * A kind's queue: its messages name the row (`shape`) and may carry a reserved turn. pg-boss
 * redelivers a message at most as often as the policy allows retries (src/queue/queue.ts).
 */
export function attemptQueue<S extends z.ZodRawShape>(name: string, shape: S) {
  return { name, schema: z.object({ ...shape, turnAt, estimatedAt }), retryLimit: MAX_AUTO_RETRIES };
}

/**
 * What the retry framework itself uses (the worker, the sweep, pacing), handed in by the
 * composition root; it names no feature. What one kind's attempt needs is that kind's business
 * (`AttemptKindDefinition.attempt`).
 */
export interface AttemptRuntime {
  config: Pick<Config, 'platformTimeoutMs' | 'sweepIntervalMs' | 'syncRetryBaseDelayMs'>;
  orm: Orm;
  logger: Logger;
  queue: Queue;
  metrics: Metrics;
  pacer: SharedPacer;
  outbox: Outbox;
}

/**
 * The columns every piece of retried work keeps. They are its lifecycle machine's whole state:
 * the machine's snapshot is rebuilt from them (`restore`), never stored beside them.
 */
export interface AttemptColumns {
  status: AttemptStatus;
  attempts: number;
  retriesLeft: number;
  errorMessage?: string | null;
  completedAt?: Date | null;
  failedAt?: Date | null;
  deadAt?: Date | null;
  /**
   * When a failed row's automatic retry is due: the start of the queue message scheduled with the
   * failure (or the later turn it was postponed to). Not the machine's state: written with it, and
   * cleared by every transition to any other status (src/attempts/repository.ts).
   */
  nextRetryAt?: Date | null;
  updatedAt: Date;
}

/** A row of retried work as a worker moves it (an entity: SyncJob, Fulfillment). */
export interface AttemptRow extends AttemptColumns {
  id: string;
  ownerId: string;
  resellerStoreId: string;
  /** Id of the only queue message allowed to move the row; older messages are stale. */
  queueMessageId?: string | null;
  version: number;
}

/**
 * Why work died without failing its last attempt: its worker was lost on its last retry, or its
 * queue message was delivered as often as the queue allows without an outcome (src/attempts/sweep.ts).
 */
export type DeathReason = 'worker_lost' | 'delivery_exhausted';

/** A table of retried work (a kind's `table`), with the lifecycle columns of `AttemptColumns`. */
export type AttemptTable = string;

/**
 * What another feature writes when rows of a kind settle (reach `dead` or `completed`), as a step of
 * the kind's transition statement (src/attempts/repository.ts): it commits with the transition
 * itself, whoever writes it (a worker, the sweep, a manual retry). It is a data-modifying statement
 * (`insert … select`, `update … from`) that reads `settled`, the rows this statement moved to
 * `dead` or `completed`: `(id, owner_id, reseller_store_id, status, error_message, updated_at)`.
 * The framework names no feature: the composition root hands each kind its steps
 * (src/workers/kinds.ts, `SETTLED_STEPS`; e.g. the reseller's to-do list raising `job_dead`).
 */
export type SettledStep = SqlStep;

/**
 * What another feature adds to a kind's outcome events (e.g. a sync job's event shows its
 * cancellations), as a condition of the kind's transition statement on `v.id`, the row being
 * written: true when the row has such a thing, so its events must be built in a transaction that
 * reads it (`outcomeEvents`) rather than from the row alone (`outcomeEventsOf`). Handed to the kind
 * by the composition root like `SettledStep`s (src/workers/kinds.ts, `EVENT_READS`).
 */
export type EventRead = SqlStep;

/**
 * What a kind keeps of a successful attempt's answer beside its result (e.g. a sync job's supplier
 * lines from the create answer): `of(created)`, written to the jsonb `column` by the statement that
 * records the outcome, so it commits with it. Null keeps what the column holds.
 */
export interface ResultDetail {
  column: string;
  of(created: Created): unknown;
}

/** Where a kind's transitions are written: its name (the timeline's `kind`), its table and its result column. */
export interface AttemptTarget {
  name: string;
  table: AttemptTable;
  resultColumn: string;
  resultDetail?: ResultDetail | undefined;
  /** Written in the statement of every transition of the kind (see `SettledStep`). */
  onSettled?: readonly SettledStep[] | undefined;
  /** When the kind's events cannot be built from a row alone (see `EventRead`). */
  eventReads?: readonly EventRead[] | undefined;
}

/**
 * The longest an attempt's call beyond its booked turns waits for a turn of its own store: behind a
 * backlog of the store's calls (other attempts' booked turns), a call that may not wait would fail
 * unsent at every retry. A slow attempt is let go of by its batch, so the wait holds no consumer.
 */
export const UNBOOKED_CALL_TURN_WAIT_MS = 60_000;

/** What one attempt needs and does: read the rows and what performing them needs, then perform one. */
export interface Attempt<W> {
  /** Reads these rows with whatever performing them needs (`W`); missing rows are left out. */
  load(rowIds: string[]): Promise<W[]>;
  /**
   * The stores `perform` will call. The worker waits for each one's turn (src/pacing/attempt-turns.ts)
   * before it takes the row, so a row whose store is not free is postponed without spending an attempt.
   */
  targets(work: W): PacedStore[];
  /**
   * Whether the kind's attempts are urgent: their calls book the store's next turn, never deferred
   * beyond the booking horizon (src/pacing/), so one waits at most about the horizon behind any
   * backlog of the store's ordinary work (a cancellation, which the supplier could still ship). Not by default.
   */
  urgent?: boolean;
  /**
   * Calls `perform` may make beyond its targets' booked turns, each waiting for a turn of its own
   * (at most UNBOOKED_CALL_TURN_WAIT_MS): counted in how long an attempt can last. None by default.
   */
  unbookedCalls?(work: W): number;
  /**
   * The side effect, outside any transaction; returns the id it produced (e.g. the order placed) and
   * the platform's HTTP status. Called once the turns of `targets(work)` have come: its first call
   * to each target spends that turn.
   */
  perform(work: W): Promise<Created>;
  /**
   * The advisory locks (src/db/locks.ts keys) the transaction recording these completed and dead rows
   * takes before it writes them: what another transaction decides under the same lock then sees the
   * outcome committed, or is committed before the outcome is written. None by default.
   */
  outcomeLocks?(rows: RowOf<W>[]): string[];
  /**
   * Runs in the transaction recording completed and dead rows, after their write and their events:
   * what the outcome means given what other transactions committed while the attempt ran (a
   * cancellation completed while its supplier's tracking arrived). A kind with it writes its
   * outcomes in a transaction.
   */
  outcomesWrittenIn?(trx: Trx, rows: RowOf<W>[]): Promise<void>;
  /**
   * Whether a completed or dead row's outcome needs that transaction (`outcomeLocks`,
   * `outcomesWrittenIn`): when given, the rows it refuses are written as those of a kind without
   * either (in one statement, when their events allow). Without it, every row's does.
   */
  outcomeInTransaction?(row: RowOf<W>): boolean;
}

/** The row of an attempt's work (`W`). */
export type RowOf<W> = W extends { row: infer R } ? R : never;

/**
 * One kind of retried work, defined in its feature's folder (`src/sync-jobs/kind.ts`) and listed
 * once where the workers are put together (src/workers/kinds.ts). `D` is what its attempt needs,
 * handed over by the composition root.
 */
export interface AttemptKindDefinition<R extends AttemptRow, K extends string, Q extends object, W extends { row: R }, D = unknown> {
  /** Names the kind in metrics (`kind` label), audit actions (`sync_job.completed`) and logs. */
  name: string;
  table: AttemptTable;
  /** The column the result is kept in; the machine's context names it `lifecycle.resultKey`. */
  resultColumn: string;
  /** What else of a successful attempt's answer the row keeps, if anything (see `ResultDetail`). */
  resultDetail?: ResultDetail | undefined;
  lifecycle: AttemptLifecycle<K>;
  /** The kind's own queue (`attemptQueue`); its message moves a row. */
  queue: QueueSpec<Q>;
  /** The queue message that moves a row, and back. */
  message(rowId: string): Q;
  rowIdOf(message: Q): string;
  /** The log field carrying the row's id (`job_id`). */
  logKey: string;
  /** Wait before the next automatic retry, after a failure that left `context`. */
  retryDelayMs(config: AttemptRuntime['config'], context: AttemptContext<K>): number;
  attempt(deps: D): Attempt<W>;
  /**
   * The audit entry of a completed or dead row (its action names the status reached); `reason` says
   * why a row died other than by failing its last attempt (metadata.reason).
   */
  outcomeAudit(row: R, reason?: DeathReason): AuditRecord;
  /**
   * The events for integrators of the statuses these rows just reached (completed, failed or dead),
   * read in the transaction that wrote them, after the write (src/events/outbox.ts appends them).
   */
  outcomeEvents(trx: Trx, rows: R[]): Promise<NewEvent[]>;
  /**
   * The same events built from the rows alone, as they are when none of the kind's `eventReads`
   * holds for a row: the worker writes a row's outcome with them in one statement, and falls back
   * to a transaction with `outcomeEvents` for the rows where one holds (src/attempts/worker.ts).
   * Optional: a kind without it always writes its outcomes in a transaction.
   */
  outcomeEventsOf?(rows: R[]): NewEvent[];
  /**
   * What other features write with the kind's transitions (see `SettledStep`). Not part of a kind's
   * own definition: the composition root hands it over when it registers the kind (src/workers/kinds.ts).
   */
  onSettled?: readonly SettledStep[] | undefined;
  /** What other features add to the kind's events (see `EventRead`), handed over like `onSettled`. */
  eventReads?: readonly EventRead[] | undefined;
}

export type AttemptKind<R extends AttemptRow, K extends string, Q extends object, W extends { row: R }, D = unknown> = ReturnType<
  typeof defineAttemptKind<R, K, Q, W, D>
>;

const isoOrNull = (date: Date | null | undefined) => (date ? date.toISOString() : null);
const dateOrNull = (iso: string | null) => (iso ? new Date(iso) : null);

/** A kind with its row projection: the machine's state read from and written to a row's columns. */
export function defineAttemptKind<R extends AttemptRow, K extends string, Q extends object, W extends { row: R }, D = unknown>(
  definition: AttemptKindDefinition<R, K, Q, W, D>,
) {
  const { lifecycle } = definition;
  const resultOf = (row: Partial<R>) => ((row as Record<string, unknown>)[lifecycle.resultKey] as string | null | undefined) ?? null;

  function contextOf(row: R): AttemptContext<K> {
    if (!Number.isInteger(row.attempts) || !Number.isInteger(row.retriesLeft)) throw new Error(`the lifecycle columns of ${row.id} are not readable`);
    const bookkeeping = {
      attempts: row.attempts,
      retriesLeft: row.retriesLeft,
      errorMessage: row.errorMessage ?? null,
      completedAt: isoOrNull(row.completedAt),
      failedAt: isoOrNull(row.failedAt),
      deadAt: isoOrNull(row.deadAt),
    };
    return { ...bookkeeping, [lifecycle.resultKey]: resultOf(row) } as AttemptContext<K>;
  }

  /** Writes a machine state onto a row's columns. */
  function project(row: Partial<R>, status: AttemptStatus, context: AttemptContext<K>, at: Date): void {
    Object.assign(row, {
      status,
      attempts: context.attempts,
      retriesLeft: context.retriesLeft,
      errorMessage: context.errorMessage,
      completedAt: dateOrNull(context.completedAt),
      failedAt: dateOrNull(context.failedAt),
      deadAt: dateOrNull(context.deadAt),
      updatedAt: at,
      [lifecycle.resultKey]: context[lifecycle.resultKey],
    });
  }

  return {
    ...definition,

    /** The columns of a new row. */
    initialColumns(at: Date): Partial<R> {
      const row: Partial<R> = {};
      const { status, context } = lifecycle.initial();
      project(row, status, context, at);
      return row;
    },

    /** The row's state as the machine sees it. */
    restore(row: R) {
      return { status: row.status, context: contextOf(row) };
    },

    /** Applies an event to a row; false (and no change) when the machine refuses it. */
    transition(row: R, event: AttemptEvent<K>, at: Date): boolean {
      const next = lifecycle.apply({ status: row.status, context: contextOf(row) }, event);
      if (!next) return false;
      project(row, next.status, next.context, at);
      return true;
    },

    canApply(row: R, event: AttemptEvent<K>): boolean {
      return lifecycle.canApply({ status: row.status, context: contextOf(row) }, event);
    },

    /** The result column's value of a row. */
    resultOf: (row: R) => resultOf(row),
  };
}
