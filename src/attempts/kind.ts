import type { AttemptContext, AttemptEvent, AttemptLifecycle, AttemptStatus } from '../../machines/attempt.machine.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import type { Config } from '../config/index.ts';
import type { AppContext } from '../context.ts';
import type { PacedStore } from '../platforms/pacer.ts';
import type { Created } from '../platforms/types.ts';
import type { Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import type { QueueKey, QueueMessage } from '../queue/queue.ts';

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

/** The tables of retried work, and the column each keeps its result in. */
export type AttemptTable = 'sync_jobs' | 'fulfillments' | 'cancellations';

/** What one attempt needs and does: read the rows and what performing them needs, then perform one. */
export interface Attempt<W> {
  /** Reads these rows with whatever performing them needs (`W`); missing rows are left out. */
  load(rowIds: string[]): Promise<W[]>;
  /**
   * The stores `perform` will call. The worker waits for each one's turn (src/attempts/pacing.ts)
   * before it takes the row, so a row whose store is not free is postponed without spending an attempt.
   */
  targets(work: W): PacedStore[];
  /**
   * The side effect, outside any transaction; returns the id it produced (e.g. the order placed) and
   * the platform's HTTP status. Called once the turns of `targets(work)` have come: its first call
   * to each target spends that turn.
   */
  perform(work: W): Promise<Created>;
}

/** One kind of retried work, as defined in kinds.ts. */
export interface AttemptKindDefinition<R extends AttemptRow, K extends string, Q extends QueueKey, W extends { row: R }> {
  /** Names the kind in metrics (`kind` label), audit actions (`sync_job.completed`) and logs. */
  name: 'sync_job' | 'fulfillment' | 'cancellation';
  table: AttemptTable;
  /** The column the result is kept in; the machine's context names it `lifecycle.resultKey`. */
  resultColumn: string;
  lifecycle: AttemptLifecycle<K>;
  queue: Q;
  /** The queue message that moves a row, and back. */
  message(rowId: string): QueueMessage<Q>;
  rowIdOf(message: QueueMessage<Q>): string;
  /** The log field carrying the row's id (`job_id`). */
  logKey: string;
  /** Wait before the next automatic retry, after a failure that left `context`. */
  retryDelayMs(config: Config, context: AttemptContext<K>): number;
  attempt(ctx: AppContext): Attempt<W>;
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
}

export type AttemptKind<R extends AttemptRow, K extends string, Q extends QueueKey, W extends { row: R }> = ReturnType<
  typeof defineAttemptKind<R, K, Q, W>
>;

const isoOrNull = (date: Date | null | undefined) => (date ? date.toISOString() : null);
const dateOrNull = (iso: string | null) => (iso ? new Date(iso) : null);

/** A kind with its row projection: the machine's state read from and written to a row's columns. */
export function defineAttemptKind<R extends AttemptRow, K extends string, Q extends QueueKey, W extends { row: R }>(
  definition: AttemptKindDefinition<R, K, Q, W>,
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
