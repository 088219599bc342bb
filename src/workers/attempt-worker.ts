import type { EntityName } from '@mikro-orm/postgresql';
import { sql, type RawBuilder } from 'kysely';
import type { Logger } from 'pino';
import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { auditInsertFrom, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/service.ts';
import type { AppContext } from '../context.ts';
import { sqlOf } from '../db/sql.ts';
import { newMessageId, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import { persistedOf, type AttemptRow } from '../shared/attempt-row.ts';
import { failureMessage, requestedDelayMs } from './failure.ts';

export interface AttemptRecord extends AttemptRow {
  id: string;
  ownerId: string;
  resellerStoreId: string;
  queueMessageId?: string | null;
  version: number;
}

type AttemptEvent<K extends string> =
  | { type: 'TAKE'; at: string }
  | ({ type: 'SUCCEED'; at: string } & Record<K, string>)
  | { type: 'FAIL'; error: string; at: string };

/** What differs between kinds of queued work; the attempt bookkeeping around it is shared. */
export interface AttemptKind<T extends AttemptRecord, K extends string, Q extends QueueKey> {
  entity: EntityName<T>;
  /** The entity's table and the column its result is kept in: where the worker writes a transition. */
  table: 'sync_jobs' | 'fulfillments';
  resultColumn: string;
  /** Names the kind of work in metrics and audit actions (`sync_job.completed`). */
  name: 'sync_job' | 'fulfillment';
  resultKey: K;
  logKey: string;
  queue: Q;
  message(row: T): QueueMessage<Q>;
  transition(row: T, event: AttemptEvent<K>, at: Date): boolean;
  /** The side effect; returns the id it produced (e.g. the order placed). */
  perform(row: T): Promise<string>;
  /** The audit metadata of a completed or dead attempt. */
  auditMetadata(row: T): Record<string, unknown>;
}

type Outcome = { ok: true; result: string } | { ok: false; error: unknown };

/**
 * Runs one queue message: take the row (processing), perform the side effect outside any
 * transaction, then record the outcome and, on failure, schedule the next automatic retry. Each
 * state change commits together with the queue message and audit entry it implies. Only the
 * message id stored on the row may move it, so stale messages (the row was retried by hand or
 * finished) do nothing.
 *
 * This is the worker's hot path, so a transition is one conditional UPDATE (and on success or
 * death its audit entry, in the same statement) rather than a unit of work: the row's version
 * must still be the one read, so a concurrent move (a redelivered message taken by another
 * worker, a manual retry) makes the write a no-op instead of overwriting it.
 */
export class AttemptWorker<T extends AttemptRecord, K extends string, Q extends QueueKey> {
  constructor(
    private readonly ctx: AppContext,
    private readonly kind: AttemptKind<T, K, Q>,
  ) {}

  async handle(messageId: string, rowId: string): Promise<void> {
    const log = this.ctx.logger.child({ [this.kind.logKey]: rowId, message_id: messageId });
    const row = await this.take(messageId, rowId);
    if (!row) {
      log.debug('stale message ignored');
      return;
    }
    this.counted('processing');
    log.info({ attempt: row.attempts }, 'attempt started');
    const outcome = await this.kind.perform(row).then(
      (result): Outcome => ({ ok: true, result }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    await this.record(row, outcome, log);
  }

  private async take(messageId: string, rowId: string): Promise<T | null> {
    const row = await this.ctx.orm.em.fork().findOne(this.kind.entity, { id: rowId } as never);
    if (!row || row.queueMessageId !== messageId) return null;
    const now = new Date();
    if (!this.kind.transition(row, { type: 'TAKE', at: now.toISOString() }, now)) return null;
    const { rows } = await this.update(row).execute(sqlOf(this.ctx.orm));
    if (rows.length === 0) return null; // another worker moved it first
    row.version = rows[0]!.version;
    return row;
  }

  private async record(row: T, outcome: Outcome, log: Logger): Promise<void> {
    const now = new Date();
    const at = now.toISOString();
    const event: AttemptEvent<K> = outcome.ok
      ? ({ type: 'SUCCEED', at, [this.kind.resultKey]: outcome.result } as AttemptEvent<K>)
      : { type: 'FAIL', error: failureMessage(outcome.error), at };
    if (!this.kind.transition(row, event, now)) return;

    if (row.status === 'completed' || row.status === 'dead') {
      if (row.status === 'dead') row.queueMessageId = null;
      const audited = auditInsertFrom(sql`updated`, this.auditOf(row), now);
      const { rows } = await sql`with updated as (${this.update(row)}) ${audited} returning id`.execute(sqlOf(this.ctx.orm));
      if (rows.length === 0) return; // moved by another worker meanwhile: its outcome stands
      if (row.status === 'completed') log.info({ result: outcome.ok ? outcome.result : null, attempts: row.attempts }, 'attempt completed');
      else log.warn({ error: row.errorMessage, attempts: row.attempts }, 'attempts exhausted: dead');
    } else {
      const { context } = persistedOf(row);
      const delayMs = Math.max(nextRetryDelayMs(this.ctx.config.syncRetryBaseDelayMs, context), outcome.ok ? 0 : requestedDelayMs(outcome.error));
      if (!(await this.moveWithMessage(row, delayMs))) return;
      log.warn({ error: row.errorMessage, attempts: row.attempts, retry_in_ms: delayMs }, 'attempt failed; retry scheduled');
    }
    this.counted(row.status);
  }

  /** Writes the transition with a new queue message (the next attempt, after `delayMs`) in one transaction. */
  private moveWithMessage(row: T, delayMs: number): Promise<boolean> {
    const messageId = newMessageId();
    row.queueMessageId = messageId;
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        const { rows } = await this.update(row).execute(trx);
        if (rows.length === 0) return false;
        await this.ctx.queue.insertIn(trx, this.kind.queue, [{ id: messageId, message: this.kind.message(row), delayMs }]);
        return true;
      });
  }

  /** The row's transition as one UPDATE that applies only while the row is at the version it was read at. */
  private update(row: T): RawBuilder<{ version: number }> {
    const result = (row as unknown as Record<K, string | null | undefined>)[this.kind.resultKey] ?? null;
    return sql<{ version: number }>`
      update ${sql.table(this.kind.table)} set
        status = ${row.status}, attempts = ${row.attempts}, error_message = ${row.errorMessage ?? null},
        completed_at = ${row.completedAt ?? null}, failed_at = ${row.failedAt ?? null}, dead_at = ${row.deadAt ?? null},
        machine_state = ${JSON.stringify(row.machineState)}::jsonb, ${sql.ref(this.kind.resultColumn)} = ${result},
        queue_message_id = ${row.queueMessageId ?? null}, updated_at = ${row.updatedAt}, version = version + 1
      where id = ${row.id} and version = ${row.version}
      returning version`;
  }

  private auditOf(row: T): AuditRecord {
    return {
      ownerId: row.ownerId,
      resellerStoreId: row.resellerStoreId,
      action: `${this.kind.name}.${row.status}`,
      resourceType: this.kind.name,
      resourceId: row.id,
      actorId: SYSTEM_ACTOR,
      metadata: this.kind.auditMetadata(row),
    };
  }

  private counted(status: string): void {
    this.ctx.metrics.transitions.inc({ kind: this.kind.name, status });
  }
}
