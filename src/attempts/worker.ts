import type { Logger } from 'pino';
import type { AttemptEvent } from '../../machines/attempt.machine.ts';
import type { AppContext } from '../context.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { PlatformError } from '../platforms/types.ts';
import { newMessageId, type QueueKey } from '../queue/queue.ts';
import { triggerOf } from './entity.ts';
import { JobFailure, failureMessage, requestedDelayMs } from './failure.ts';
import type { Attempt, AttemptKind, AttemptRow } from './kind.ts';
import { writeAttemptTransitions, type AttemptWrite, type TimelineStep } from './repository.ts';

/** A queue message naming the row it may move. */
export interface AttemptMessage {
  messageId: string;
  rowId: string;
}

type Outcome = { ok: true; result: string; platformStatus: number } | { ok: false; error: unknown };

/** What a delivered message does to its row when it is taken. */
type TakeMove = 'take' | 'lost' | null;

/** The timeline step of an attempt found lost: it ends failed, with no answer from the platform. */
export const LOST_ATTEMPT: TimelineStep = { outcome: 'failed', platformStatus: null };

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
   * Returns the ids of the messages whose outcome could not be recorded (the database went away
   * meanwhile): pg-boss delivers those again, alone; every other message of the batch is done. An
   * outcome is made storable before it is written, and one that still cannot be written for a reason
   * of its own is recorded as a failed attempt instead, so one bad outcome costs its batch-mates
   * nothing. Rejects when the batch could not be read or taken: pg-boss delivers it again, and the
   * messages of rows moved meanwhile are stale by then.
   */
  async handle(messages: AttemptMessage[]): Promise<Set<string>> {
    const taken = await this.take(messages);
    const recorded = await Promise.all(taken.map(({ work, log }) => this.run(work, log)));
    return new Set(taken.filter((_, i) => !recorded[i]).map(({ messageId }) => messageId));
  }

  private async take(messages: AttemptMessage[]): Promise<{ work: W; log: Logger; messageId: string }[]> {
    const loaded = new Map((await this.attempt.load([...new Set(messages.map((m) => m.rowId))])).map((work) => [work.row.id, work]));
    const now = new Date();
    const taking: { work: W; log: Logger; messageId: string; timeline: TimelineStep }[] = [];
    const lost: { work: W; log: Logger }[] = [];
    for (const { messageId, rowId } of messages) {
      const log = this.ctx.logger.child({ [this.kind.logKey]: rowId, message_id: messageId });
      const work = loaded.get(rowId);
      // What starts this attempt, read from the row before the LOSE and TAKE change it.
      const trigger = work && triggerOf(work.row.status, work.row.attempts);
      const move = work && trigger && work.row.queueMessageId === messageId ? this.moveOnTake(work.row, now, log) : null;
      if (move === 'take') taking.push({ work: work!, log, messageId, timeline: { trigger: trigger! } });
      else if (move === 'lost') lost.push({ work: work!, log });
      else log.debug('stale message ignored');
    }
    const writes = [
      ...taking.map(({ work, timeline }) => this.writeOf(work.row, undefined, timeline)),
      ...lost.map(({ work }) => this.writeOf(work.row, this.kind.outcomeAudit(work.row, 'worker_lost'), LOST_ATTEMPT)),
    ];
    const moved = await this.write(sqlOf(this.ctx.orm), writes);
    lost.forEach(({ work, log }, i) => {
      if (!moved[taking.length + i]) return;
      this.counted('dead');
      log.warn({ error: work.row.errorMessage, attempts: work.row.attempts, reason: 'worker_lost' }, 'attempts exhausted: dead');
    });
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

  /**
   * TAKE, after LOSE when the row is still processing: the message was delivered again because the
   * attempt it started was lost (its worker died, or its outcome could not be recorded), and that
   * attempt counts as failed, so redeliveries can never attempt the work more often than the policy
   * allows. 'lost' when that was its last retry (it is dead now). A row whose stored state the
   * machine cannot read is left alone, not the whole batch with it.
   */
  private moveOnTake(row: R, now: Date, log: Logger): TakeMove {
    const at = now.toISOString();
    try {
      if (row.status === 'processing') {
        if (!this.kind.transition(row, { type: 'LOSE', at }, now)) return null;
        log.warn({ attempts: row.attempts }, 'previous attempt lost: counted as failed');
        if ((row.status as AttemptRow['status']) === 'dead') {
          row.queueMessageId = null;
          return 'lost';
        }
      }
      return this.kind.transition(row, { type: 'TAKE', at }, now) ? 'take' : null;
    } catch (error) {
      log.error({ err: error }, 'row state unreadable; message ignored');
      return null;
    }
  }

  /** Performs one attempt and records its outcome; false when it could not be recorded. */
  private async run(work: W, log: Logger): Promise<boolean> {
    const outcome = await this.attempt.perform(work).then(
      (created): Outcome => ({ ok: true, result: created.id, platformStatus: created.status }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    return this.record(work.row, outcome, log);
  }

  /**
   * Records the outcome. When it cannot be written for a reason of its own (not an unreachable
   * database), the attempt is recorded as failed with a plain message instead, so the work is
   * retried under the policy rather than its message redelivered until the queue gives up. False
   * when nothing could be recorded: the message is delivered again, and the attempt then counts as lost.
   */
  private async record(row: R, outcome: Outcome, log: Logger): Promise<boolean> {
    const read = { ...row };
    try {
      await this.recordOutcome(row, outcome, log);
      return true;
    } catch (error) {
      Object.assign(row, read);
      log.error({ err: error }, 'attempt outcome not recorded');
      if (isDatabaseUnavailable(error)) return false;
      const name = error instanceof Error ? error.name : 'unknown';
      try {
        await this.recordOutcome(row, { ok: false, error: new JobFailure(`the attempt's outcome could not be recorded (${name})`) }, log);
        return true;
      } catch (fallbackError) {
        Object.assign(row, read);
        log.error({ err: fallbackError }, 'attempt failure not recorded either; the message will be delivered again');
        return false;
      }
    }
  }

  private async recordOutcome(row: R, outcome: Outcome, log: Logger): Promise<void> {
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
