import type { Logger } from 'pino';
import type { AttemptEvent } from '../../machines/attempt.machine.ts';
import type { AppContext } from '../context.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { PlatformError } from '../platforms/types.ts';
import { newMessageId, type QueueKey } from '../queue/queue.ts';
import { triggerOf } from './entity.ts';
import { failureMessage, requestedDelayMs } from './failure.ts';
import type { Attempt, AttemptKind, AttemptRow } from './kind.ts';
import { writeAttemptTransitions, type AttemptWrite, type TimelineStep } from './repository.ts';

/** A queue message naming the row it may move. */
export interface AttemptMessage {
  messageId: string;
  rowId: string;
}

type Outcome = { ok: true; result: string; platformStatus: number } | { ok: false; error: unknown };

/**
 * Runs a batch of queue messages of one kind of work: take their rows (processing), perform each
 * attempt outside any transaction, then record each outcome and, on failure, schedule the next
 * automatic retry. Each state change commits together with the queue message and audit entry it
 * implies. Only the message id stored on a row may move it, so stale messages (the row was retried
 * by hand or finished) do nothing.
 *
 * This is the worker's hot path, so the batch's rows are read in one statement and taken in
 * another, and outcomes are recorded with their audit entries in a third, shared by the attempts
 * that finish together (group commit); a transition is a conditional UPDATE that applies only
 * while the row is at the version read, so a concurrent move (a redelivered message taken by
 * another worker) turns the write into a no-op instead of overwriting it.
 */
export class AttemptWorker<R extends AttemptRow, K extends string, Q extends QueueKey, W extends { row: R }> {
  /** Completed and dead attempts finishing together, of every batch, are recorded in one transaction. */
  private readonly outcomes = new GroupCommit((writes: AttemptWrite<R>[]) => this.writeOutcomes(writes), { maxItems: 64, maxInFlight: 2 });
  private readonly attempt: Attempt<W>;

  constructor(
    private readonly ctx: AppContext,
    private readonly kind: AttemptKind<R, K, Q, W>,
  ) {
    this.attempt = kind.attempt(ctx);
  }

  /**
   * Rejects when the batch could not be read or taken, or an attempt could not be recorded (the
   * database went away): pg-boss delivers the batch again, and its recorded rows' messages are stale
   * by then while the others are taken again.
   */
  async handle(messages: AttemptMessage[]): Promise<void> {
    const taken = await this.take(messages);
    const settled = await Promise.allSettled(taken.map(({ work, log }) => this.run(work, log)));
    let failure: unknown;
    settled.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      taken[i]!.log.error({ err: result.reason }, 'attempt outcome not recorded; the message will be delivered again');
      failure ??= result.reason;
    });
    if (failure !== undefined) throw failure;
  }

  private async take(messages: AttemptMessage[]): Promise<{ work: W; log: Logger }[]> {
    const loaded = new Map((await this.attempt.load([...new Set(messages.map((m) => m.rowId))])).map((work) => [work.row.id, work]));
    const now = new Date();
    const taking: { work: W; log: Logger; timeline: TimelineStep }[] = [];
    for (const { messageId, rowId } of messages) {
      const log = this.ctx.logger.child({ [this.kind.logKey]: rowId, message_id: messageId });
      const work = loaded.get(rowId);
      // What starts this attempt, read from the row before the TAKE changes it.
      const timeline = work && { trigger: triggerOf(work.row.status, work.row.attempts) };
      if (!work || !timeline || work.row.queueMessageId !== messageId || !this.takes(work.row, now, log)) {
        log.debug('stale message ignored');
        continue;
      }
      taking.push({ work, log, timeline });
    }
    const moved = await this.write(sqlOf(this.ctx.orm), taking.map(({ work, timeline }) => this.writeOf(work.row, undefined, timeline)));
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
  private takes(row: R, now: Date, log: Logger): boolean {
    try {
      return this.kind.transition(row, { type: 'TAKE', at: now.toISOString() }, now);
    } catch (error) {
      log.error({ err: error }, 'row state unreadable; message ignored');
      return false;
    }
  }

  private async run(work: W, log: Logger): Promise<void> {
    const outcome = await this.attempt.perform(work).then(
      (created): Outcome => ({ ok: true, result: created.id, platformStatus: created.status }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    await this.record(work.row, outcome, log);
  }

  private async record(row: R, outcome: Outcome, log: Logger): Promise<void> {
    const now = new Date();
    const at = now.toISOString();
    const event = (
      outcome.ok ? { type: 'SUCCEED', at, [this.kind.lifecycle.resultKey]: outcome.result } : { type: 'FAIL', error: failureMessage(outcome.error), at }
    ) as AttemptEvent<K>;
    if (!this.kind.transition(row, event, now)) return;
    const timeline: TimelineStep = outcome.ok
      ? { outcome: 'succeeded', platformStatus: outcome.platformStatus }
      : { outcome: 'failed', platformStatus: outcome.error instanceof PlatformError ? outcome.error.status : null };

    if (row.status === 'completed' || row.status === 'dead') {
      if (row.status === 'dead') row.queueMessageId = null;
      if (!(await this.outcomes.submit(this.writeOf(row, this.kind.outcomeAudit(row), timeline)))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
      if (row.status === 'completed') log.info({ result: outcome.ok ? outcome.result : null, attempts: row.attempts }, 'attempt completed');
      else log.warn({ error: row.errorMessage, attempts: row.attempts }, 'attempts exhausted: dead');
    } else {
      const { context } = this.kind.restore(row);
      const delayMs = Math.max(this.kind.retryDelayMs(this.ctx.config, context), outcome.ok ? 0 : requestedDelayMs(outcome.error));
      if (!(await this.moveWithMessage(row, timeline, delayMs))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
      log.warn({ error: row.errorMessage, attempts: row.attempts, retry_in_ms: delayMs }, 'attempt failed; retry scheduled');
    }
    this.counted(row.status);
  }

  /** Writes the transition with a new queue message (the next attempt, after `delayMs`) in one transaction. */
  private moveWithMessage(row: R, timeline: TimelineStep, delayMs: number): Promise<boolean> {
    row.queueMessageId = newMessageId();
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        if (!(await this.write(trx, [this.writeOf(row, undefined, timeline)]))[0]) return false;
        await this.ctx.queue.insertIn(trx, this.kind.queue, [{ id: row.queueMessageId!, message: this.kind.message(row.id), delayMs }]);
        await this.ctx.outbox.append(trx, await this.kind.outcomeEvents(trx, [row]));
        return true;
      });
  }

  /** Completed and dead rows with their audit entries and timelines (one statement), and the events of those written, in one transaction. */
  private writeOutcomes(writes: AttemptWrite<R>[]): Promise<boolean[]> {
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        const written = await this.write(trx, writes);
        const rows = writes.filter((_, i) => written[i]).map(({ row }) => row);
        await this.ctx.outbox.append(trx, await this.kind.outcomeEvents(trx, rows));
        return written;
      });
  }

  private writeOf(row: R, audit?: AttemptWrite<R>['audit'], timeline?: TimelineStep): AttemptWrite<R> {
    return { row, result: this.kind.resultOf(row), audit, timeline };
  }

  private write(db: Db | Trx, writes: AttemptWrite<R>[]): Promise<boolean[]> {
    return writeAttemptTransitions(db, this.kind.table, this.kind.resultColumn, writes);
  }

  private counted(status: string): void {
    this.ctx.metrics.attemptTransitions.inc({ kind: this.kind.name, status });
  }
}
