import { OptimisticLockError, type EntityManager, type EntityName } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import type { AppContext } from '../context.ts';
import { persistedOf, type AttemptRow } from '../shared/attempt-row.ts';
import { failureMessage, requestedDelayMs } from './failure.ts';

export interface AttemptRecord extends AttemptRow {
  id: string;
  queueMessageId?: string | null;
}

type AttemptEvent<K extends string> =
  | { type: 'TAKE'; at: string }
  | ({ type: 'SUCCEED'; at: string } & Record<K, string>)
  | { type: 'FAIL'; error: string; at: string };

/** What differs between kinds of queued work; the attempt bookkeeping around it is shared. */
export interface AttemptKind<T extends AttemptRecord, K extends string> {
  entity: EntityName<T>;
  /** Names the kind of work in metrics. */
  name: 'sync_job' | 'fulfillment';
  resultKey: K;
  logKey: string;
  transition(row: T, event: AttemptEvent<K>, at: Date): boolean;
  /** The side effect; returns the id it produced (e.g. the order placed). */
  perform(row: T): Promise<string>;
  schedule(em: EntityManager, row: T, delayMs: number): Promise<void>;
  onCompleted(em: EntityManager, row: T): void;
  onDead(em: EntityManager, row: T): void;
}

type Outcome = { ok: true; result: string } | { ok: false; error: unknown };

/**
 * Runs one queue message: take the row (processing), perform the side effect outside any
 * transaction, then record the outcome and, on failure, schedule the next automatic retry. Each
 * state change commits together with the queue message and audit entry it implies. Only the
 * message id stored on the row may move it, so stale messages (the row was retried by hand or
 * finished) do nothing.
 */
export class AttemptWorker<T extends AttemptRecord, K extends string> {
  constructor(
    private readonly ctx: AppContext,
    private readonly kind: AttemptKind<T, K>,
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
    await this.record(messageId, rowId, outcome, log);
  }

  private async take(messageId: string, rowId: string): Promise<T | null> {
    try {
      return await this.ctx.orm.em.fork().transactional(async (em) => {
        const row = await em.findOne(this.kind.entity, { id: rowId } as never);
        if (!row || row.queueMessageId !== messageId) return null;
        const now = new Date();
        return this.kind.transition(row, { type: 'TAKE', at: now.toISOString() }, now) ? row : null;
      });
    } catch (error) {
      if (error instanceof OptimisticLockError) return null; // another worker moved it first
      throw error;
    }
  }

  private counted(status: string): void {
    this.ctx.metrics.transitions.inc({ kind: this.kind.name, status });
  }

  private async record(messageId: string, rowId: string, outcome: Outcome, log: Logger): Promise<void> {
    const reached = await this.ctx.orm.em.fork().transactional(async (em) => {
      const row = await em.findOne(this.kind.entity, { id: rowId } as never);
      if (!row || row.queueMessageId !== messageId) return null;
      const now = new Date();
      const at = now.toISOString();
      const event: AttemptEvent<K> = outcome.ok
        ? ({ type: 'SUCCEED', at, [this.kind.resultKey]: outcome.result } as AttemptEvent<K>)
        : { type: 'FAIL', error: failureMessage(outcome.error), at };
      if (!this.kind.transition(row, event, now)) return null;

      if (row.status === 'completed') {
        this.kind.onCompleted(em, row);
        log.info({ result: outcome.ok ? outcome.result : null, attempts: row.attempts }, 'attempt completed');
      } else if (row.status === 'dead') {
        row.queueMessageId = null;
        this.kind.onDead(em, row);
        log.warn({ error: row.errorMessage, attempts: row.attempts }, 'attempts exhausted: dead');
      } else {
        const { context } = persistedOf(row);
        const delayMs = Math.max(
          nextRetryDelayMs(this.ctx.config.syncRetryBaseDelayMs, context),
          outcome.ok ? 0 : requestedDelayMs(outcome.error),
        );
        await this.kind.schedule(em, row, delayMs);
        log.warn({ error: row.errorMessage, attempts: row.attempts, retry_in_ms: delayMs }, 'attempt failed; retry scheduled');
      }
      return row.status;
    });
    if (reached) this.counted(reached);
  }
}
