import { sql, type Kysely, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { INSERT_AUDIT_ENTRIES, type AuditRecord } from '../audit-log/service.ts';
import type { AppContext } from '../context.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { sqlOf } from '../db/sql.ts';
import { newMessageId, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import { newId } from '../shared/ids.ts';
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
export interface AttemptKind<T extends AttemptRecord, K extends string, Q extends QueueKey, W extends { row: T } = { row: T }> {
  /** Reads these rows and whatever performing them needs (`W`), in one statement; missing rows are left out. */
  load(rowIds: string[]): Promise<W[]>;
  /** The rows' table and the column the result is kept in: where the worker writes a transition. */
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
  perform(work: W): Promise<string>;
  /** The audit entry of a completed or dead attempt (its action names the status reached). */
  audit(row: T): AuditRecord;
}

/** A queue message naming the row it may move. */
export interface AttemptMessage {
  messageId: string;
  rowId: string;
}

type Outcome = { ok: true; result: string } | { ok: false; error: unknown };

/** A row's state after a transition, and the audit entry written with it, if any. */
interface Write<T> {
  row: T;
  audit?: AuditRecord;
}

type Db = Kysely<unknown> | Transaction<unknown>;

/**
 * Runs a batch of queue messages: take their rows (processing), perform each side effect outside
 * any transaction, then record each outcome and, on failure, schedule the next automatic retry.
 * Each state change commits together with the queue message and audit entry it implies. Only the
 * message id stored on a row may move it, so stale messages (the row was retried by hand or
 * finished) do nothing.
 *
 * This is the worker's hot path, so the batch's rows are read in one statement and taken in
 * another, and outcomes are recorded with their audit entries in a third, shared by the attempts
 * that finish together (group commit); a transition is a
 * conditional UPDATE that applies only while the row is at the version read, so a concurrent move
 * (a redelivered message taken by another worker) turns the write into a no-op instead of
 * overwriting it.
 */
export class AttemptWorker<T extends AttemptRecord, K extends string, Q extends QueueKey, W extends { row: T } = { row: T }> {
  /** Completed and dead attempts finishing together, of every batch, are recorded in one statement. */
  private readonly outcomes = new GroupCommit((writes: Write<T>[]) => this.write(sqlOf(this.ctx.orm), writes), { maxItems: 64, maxInFlight: 2 });

  constructor(
    private readonly ctx: AppContext,
    private readonly kind: AttemptKind<T, K, Q, W>,
  ) {}

  /**
   * Rejects when the batch could not be read or taken, or an attempt could not be recorded (the
   * database went away): pg-boss delivers the batch again, and its recorded rows' messages are stale
   * by then while the others are taken again.
   */
  async handle(messages: AttemptMessage[]): Promise<void> {
    const taken = await this.take(messages);
    const settled = await Promise.allSettled(taken.map(({ work, log }) => this.attempt(work, log)));
    let failure: unknown;
    settled.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      taken[i]!.log.error({ err: result.reason }, 'attempt outcome not recorded; the message will be delivered again');
      failure ??= result.reason;
    });
    if (failure !== undefined) throw failure;
  }

  private async take(messages: AttemptMessage[]): Promise<{ work: W; log: Logger }[]> {
    const loaded = new Map((await this.kind.load([...new Set(messages.map((m) => m.rowId))])).map((work) => [work.row.id, work]));
    const now = new Date();
    const taking: { work: W; log: Logger }[] = [];
    for (const { messageId, rowId } of messages) {
      const log = this.ctx.logger.child({ [this.kind.logKey]: rowId, message_id: messageId });
      const work = loaded.get(rowId);
      if (!work || work.row.queueMessageId !== messageId || !this.takes(work.row, now, log)) {
        log.debug('stale message ignored');
        continue;
      }
      taking.push({ work, log });
    }
    const moved = await this.write(sqlOf(this.ctx.orm), taking.map(({ work }) => ({ row: work.row })));
    const taken = taking.filter(({ log }, i) => {
      if (!moved[i]) log.debug('taken by another worker first');
      return moved[i];
    });
    for (const { work, log } of taken) {
      this.counted('processing');
      log.info({ attempt: work.row.attempts }, 'attempt started');
    }
    return taken;
  }

  /** The TAKE transition; a row whose stored state the machine cannot read is left alone, not the whole batch with it. */
  private takes(row: T, now: Date, log: Logger): boolean {
    try {
      return this.kind.transition(row, { type: 'TAKE', at: now.toISOString() }, now);
    } catch (error) {
      log.error({ err: error }, 'row state unreadable; message ignored');
      return false;
    }
  }

  private async attempt(work: W, log: Logger): Promise<void> {
    const outcome = await this.kind.perform(work).then(
      (result): Outcome => ({ ok: true, result }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    await this.record(work.row, outcome, log);
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
      if (!(await this.outcomes.submit({ row, audit: this.kind.audit(row) }))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
      if (row.status === 'completed') log.info({ result: outcome.ok ? outcome.result : null, attempts: row.attempts }, 'attempt completed');
      else log.warn({ error: row.errorMessage, attempts: row.attempts }, 'attempts exhausted: dead');
    } else {
      const { context } = persistedOf(row);
      const delayMs = Math.max(nextRetryDelayMs(this.ctx.config.syncRetryBaseDelayMs, context), outcome.ok ? 0 : requestedDelayMs(outcome.error));
      if (!(await this.moveWithMessage(row, delayMs))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
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
        if (!(await this.write(trx, [{ row }]))[0]) return false;
        await this.ctx.queue.insertIn(trx, this.kind.queue, [{ id: messageId, message: this.kind.message(row), delayMs }]);
        return true;
      });
  }

  /**
   * One statement: each row's projected state, written only where the row is still at the version
   * it was read at, with its audit entry if it has one. Returns whether each was written; the rows
   * written have their `version` brought up to date.
   */
  private async write(db: Db, writes: Write<T>[]): Promise<boolean[]> {
    if (writes.length === 0) return [];
    const values = writes.map(({ row, audit }) => ({
      id: row.id,
      version: row.version,
      status: row.status,
      attempts: row.attempts,
      error_message: row.errorMessage ?? null,
      completed_at: row.completedAt ?? null,
      failed_at: row.failedAt ?? null,
      dead_at: row.deadAt ?? null,
      machine_state: row.machineState,
      result: (row as unknown as Record<K, string | null | undefined>)[this.kind.resultKey] ?? null,
      queue_message_id: row.queueMessageId ?? null,
      updated_at: row.updatedAt,
      audit_id: audit ? newId('auditEntry') : null,
      audit: audit ?? null,
    }));
    const { rows } = await sql<{ id: string; read_version: number; version: number }>`
      with v as (
        select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as v(
          id text, version int, status text, attempts int, error_message text, completed_at timestamptz,
          failed_at timestamptz, dead_at timestamptz, machine_state jsonb, result text, queue_message_id text,
          updated_at timestamptz, audit_id text, audit jsonb)
      ), written as (
        update ${sql.table(this.kind.table)} as t set
          status = v.status, attempts = v.attempts, error_message = v.error_message, completed_at = v.completed_at,
          failed_at = v.failed_at, dead_at = v.dead_at, machine_state = v.machine_state,
          ${sql.ref(this.kind.resultColumn)} = v.result, queue_message_id = v.queue_message_id,
          updated_at = v.updated_at, version = t.version + 1
        from v where t.id = v.id and t.version = v.version
        returning t.id, v.version as read_version, t.version, t.owner_id, t.reseller_store_id
      ), audited as (
        ${INSERT_AUDIT_ENTRIES}
        select v.audit_id, v.audit->>'ownerId', v.audit->>'resellerStoreId', v.audit->>'action', v.audit->>'resourceType',
          v.audit->>'resourceId', coalesce(v.audit->'metadata', '{}'), v.audit->>'actorId', v.updated_at
        from written w join v on v.id = w.id
        where v.audit_id is not null
      )
      select id, read_version, version from written
    `.execute(db);
    return writes.map(({ row }) => {
      const written = rows.find((w) => w.id === row.id && w.read_version === row.version);
      if (written) row.version = written.version;
      return written !== undefined;
    });
  }

  private counted(status: string): void {
    this.ctx.metrics.attemptTransitions.inc({ kind: this.kind.name, status });
  }
}
