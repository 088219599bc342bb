import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AttemptEvent } from '../../machines/attempt.machine.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { holdLocks } from '../db/locks.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { DEFAULT_MAX_INLINE_RETRY_AFTER_MS } from '../platforms/index.ts';
import { captureExchanges, type Exchange } from '../platforms/exchange.ts';
import { PlatformError } from '../platforms/types.ts';
import { newMessageId } from '../queue/queue.ts';
import type { AttemptTrigger } from '../../contract/enums.ts';
import { triggerOf } from './entity.ts';
import { JobFailure, failureMessage, requestedDelayMs } from './failure.ts';
import { UNBOOKED_CALL_TURN_WAIT_MS, type Attempt, type AttemptKind, type AttemptRow, type AttemptRuntime, type RowOf } from './kind.ts';
import { attemptTurns, leaveLines, MAX_TURN_WAIT_MS, postponeToTurns, type Postponement } from '../pacing/attempt-turns.ts';
import { replaceQueueMessages, writeAttemptTransitions, type AttemptWrite, type TimelineStep } from './repository.ts';

/** A queue message naming the row it may move. */
export interface AttemptMessage {
  messageId: string;
  rowId: string;
  /** The turn the message was postponed to (src/pacing/attempt-turns.ts), if it was. */
  turnAt?: Date | undefined;
  /** The estimate of its turn the message was postponed with, beyond its store's booking horizon, if it was. */
  estimatedAt?: Date | undefined;
}

/** A row taken, and when its turn to call its stores comes (`performance.now()` time). */
interface Taken<W> {
  work: W;
  log: Logger;
  messageId: string;
  turnAt: number;
  /** Set once the attempt's platform calls are over (before its outcome is recorded). */
  called?: boolean;
  /** The row being handed to a watchdog message (see `letGo`): the outcome is recorded after it. */
  handover?: Promise<boolean>;
  /** The watchdog message the row was handed to, deleted with the outcome's write. */
  watchdog?: string;
}

/**
 * A batch's attempts still calling their platform this long after it started are let go of, so one
 * slow platform does not hold the batch's consumer (and so other stores' messages) for the length of
 * its calls.
 */
const LET_GO_AFTER_MS = 1_500;
/** Attempts let go of and still running, per worker, at most; past it a batch waits for them again. */
const MAX_LET_GO = 512;
/**
 * How often the watchdogs of attempts still running are put off (to a full delay from then): an
 * attempt that waits long for its store's turns outlives any fixed delay, and must not be taken
 * again as lost while its process still runs it. Well under the shortest watchdog delay (30 s and more).
 */
const WATCHDOG_DEFER_MS = 15_000;

/** What an attempt came to, with the excerpt of its last platform call (null when it made none). */
type Outcome = ({ ok: true; result: string; platformStatus: number | null; detail: unknown } | { ok: false; error: unknown }) & { exchange?: Exchange | null };

/**
 * How an attempt's outcome was delivered: by its batch's message (settled with the outcome), or,
 * once let go of, by the watchdog message the row was handed to (deleted with it).
 */
type Delivery = { messageId?: string | undefined; watchdog?: string | undefined };

/** The batch's message, settled with the outcome whatever its write does (a lost race leaves it stale). */
const settled = ({ messageId }: Delivery): AttemptWrite['message'] => (messageId ? { id: messageId, settle: 'always' } : undefined);

/**
 * What a delivered message does to its row when it is taken. A take after a lost attempt that had
 * retries left carries the row as that failure left it (`failed`): its `…failed` event.
 */
type TakeMove<R> = { move: 'take'; failed: R | null } | { move: 'lost' } | null;

/** The timeline step of an attempt found lost: it ends failed, with no answer from the platform. */
export const LOST_ATTEMPT: TimelineStep = { outcome: 'failed', platformStatus: null };

/**
 * Runs a batch of queue messages of one kind of work: take their rows (processing), perform each
 * attempt outside any transaction, then record each outcome and, on failure, schedule the next
 * automatic retry. Each state change commits together with the queue message and audit entry it
 * implies, and settles the message that delivered it (src/queue/queue.ts `consumeSettling`: no
 * completion statement and commit of the batch's own). Only the message id stored on a row may
 * move it, so stale messages (the row was retried by hand or finished) do nothing.
 *
 * This is the worker's hot path, so the batch's rows are read in one statement and taken in
 * another, and outcomes are recorded with their audit entries in a third, shared by the attempts
 * that finish together (group commit), which also inserts their events when they are built from the
 * rows alone (`writeOutcomes`: no transaction, no read); a transition is a conditional UPDATE that applies only
 * while the row is at the version read, so a concurrent move (a redelivered message taken by
 * another worker) turns the write into a no-op instead of overwriting it.
 */
export class AttemptWorker<R extends AttemptRow, K extends string, Q extends object, W extends { row: R }> {
  /**
   * Completed and dead attempts finishing together, of every batch, are recorded in one write, one
   * write at a time: those finishing meanwhile wait for it and go together in the next, so under load
   * each write carries more of them (as the routing of orders, src/orders/routing.ts).
   */
  private readonly outcomes = new GroupCommit((writes: AttemptWrite<R>[]) => this.writeOutcomes(writes), { maxItems: 64, maxInFlight: 1 });
  /** Attempts let go of (still calling a slow platform), until they record their outcome. */
  readonly #letGo = new Set<Promise<boolean>>();
  /**
   * Outcomes the one-statement path wrote (it commits on its own): when the transaction for the rest
   * of their group fails, GroupCommit writes the group again item by item, and these must not be
   * written twice (their rows carry the version they were written at, so the check would pass).
   */
  readonly #appliedAlone = new WeakSet<AttemptWrite<R>>();
  /** The watchdog messages of attempts let go of and still running, with their work (see `deferWatchdogs`). */
  readonly #watchdogs = new Map<string, W>();
  #deferring: NodeJS.Timeout | undefined;

  /** `attempt`: what one attempt of this kind does, built by the composition root from `kind.attempt`. */
  constructor(
    private readonly ctx: AttemptRuntime,
    private readonly kind: AttemptKind<R, K, Q, W, never>,
    private readonly attempt: Attempt<W>,
  ) {}

  /**
   * Settles every message of the batch in the statement that records what it did: a stale one (or
   * one `dropped`, unreadable) with the batch's take, a postponed one with its postponement, a
   * taken one with its attempt's outcome (or its hand-over to a watchdog when let go of).
   * Returns the ids of the messages whose outcome could not be recorded (the database went away
   * meanwhile): the consumer fails those, and pg-boss delivers them again, alone. An
   * outcome is made storable before it is written, and one that still cannot be written for a reason
   * of its own is recorded as a failed attempt instead, so one bad outcome costs its batch-mates
   * nothing. Rejects when the batch could not be read or taken: pg-boss delivers it again, and the
   * messages of rows moved meanwhile are stale by then. Attempts still calling their platform after
   * LET_GO_AFTER_MS are let go of (`letGo`) and finish on their own.
   */
  async handle(messages: AttemptMessage[], dropped: string[] = []): Promise<Set<string>> {
    const taken = await this.take(messages, dropped);
    const runs = taken.map((item) => this.run(item));
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([Promise.all(runs), new Promise<null>((resolve) => (timer = setTimeout(resolve, LET_GO_AFTER_MS, null)))]);
    clearTimeout(timer);
    const letGo = inTime ? new Set<Taken<W>>() : await this.letGo(taken.filter((item) => !item.called));
    const unrecorded = new Set<string>();
    for (const [i, item] of taken.entries()) {
      if (letGo.has(item)) {
        // Its outcome is recorded when its call ends; should that fail, its watchdog takes the row again.
        const watchdog = item.watchdog!;
        this.#watchdogs.set(watchdog, item.work);
        this.#deferring ??= setInterval(() => void this.deferWatchdogs(), WATCHDOG_DEFER_MS).unref();
        const running: Promise<boolean> = runs[i]!.finally(() => {
          this.#letGo.delete(running);
          this.#watchdogs.delete(watchdog);
        });
        this.#letGo.add(running);
      } else if (!(await runs[i]!)) unrecorded.add(item.messageId);
    }
    return unrecorded;
  }

  /**
   * Puts off the watchdogs of the attempts this process still runs, each to its full delay from now:
   * a watchdog fires only once its attempt's process stopped putting it off (it died), however long
   * the attempt's calls wait for their turns. One statement for all of them.
   */
  private async deferWatchdogs(): Promise<void> {
    if (this.#watchdogs.size === 0) {
      clearInterval(this.#deferring);
      this.#deferring = undefined;
      return;
    }
    const messages = [...this.#watchdogs].map(([id, work]) => ({ id, delayMs: this.longestAttemptMs(work) }));
    await this.ctx.queue.defer(sqlOf(this.ctx.orm), this.kind.queue, messages).catch((error: unknown) => {
      this.ctx.logger.warn({ err: error, watchdogs: messages.length }, 'could not put off the watchdogs of running attempts');
    });
  }

  /** Resolves once every attempt let go of has recorded its outcome (at shutdown, before the database closes). */
  async drain(): Promise<void> {
    while (this.#letGo.size > 0) await Promise.all([...this.#letGo]);
    clearInterval(this.#deferring);
    this.#deferring = undefined;
  }

  /**
   * Lets the batch finish without attempts still calling their platform: each row is handed, in one
   * transaction, to a new queue message that starts only after any attempt must have ended (a
   * watchdog), so the batch's message can complete without the row being left with no live message.
   * The attempt records its outcome as usual (after the hand-over, whose version it then holds) and
   * deletes the watchdog with it; if this process dies first, the watchdog delivers the row again,
   * and the attempt counts as lost (LOSE), as with a worker that died holding its message. Returns
   * the attempts let go of.
   */
  private async letGo(calling: Taken<W>[]): Promise<Set<Taken<W>>> {
    if (calling.length === 0 || this.#letGo.size + calling.length > MAX_LET_GO) return new Set();
    const watchdogs = calling.map(() => newMessageId());
    // Assigned before any await: an attempt whose call ends now waits for the hand-over to record.
    const handover = this.handOver(calling, watchdogs);
    calling.forEach((item, i) => (item.handover = handover.then((handed) => handed[i]!, () => false)));
    let handed: boolean[];
    try {
      handed = await handover;
    } catch (error) {
      // Nothing was handed over: the batch waits for its attempts as it would have.
      this.ctx.logger.warn({ err: error }, 'slow attempts not let go of: the hand-over failed');
      return new Set();
    }
    const letGo = calling.filter((_, i) => handed[i]);
    for (const _ of letGo) this.ctx.metrics.attemptsLetGo.inc({ kind: this.kind.name });
    return new Set(letGo);
  }

  /**
   * Longer than the attempt can last: each of its calls tried four times (one and three inline
   * retries), each try timing out after waiting the longest inline wait, and, for a kind whose calls
   * may wait for turns of their own (`unbookedCalls`), each try first waiting for one; and a margin.
   */
  private longestAttemptMs(work: W): number {
    const calls = Math.max(1, this.attempt.targets(work).length) + (this.attempt.unbookedCalls?.(work) ?? 0);
    const turnWaitMs = this.attempt.unbookedCalls ? UNBOOKED_CALL_TURN_WAIT_MS : 0;
    return calls * 4 * (this.ctx.config.platformTimeoutMs + DEFAULT_MAX_INLINE_RETRY_AFTER_MS + turnWaitMs) + 30_000;
  }

  private async handOver(calling: Taken<W>[], watchdogs: string[]): Promise<boolean[]> {
    const handed = await sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        const replaced = await replaceQueueMessages(
          trx,
          this.kind.table,
          calling.map(({ work: { row } }, i) => ({ id: row.id, version: row.version, messageId: row.queueMessageId ?? null, nextMessageId: watchdogs[i]! })),
        );
        const messages = calling.flatMap(({ work }, i) =>
          replaced[i] ? [{ id: watchdogs[i]!, message: this.kind.message(work.row.id), delayMs: this.longestAttemptMs(work) }] : [],
        );
        await this.ctx.queue.insertIn(trx, this.kind.queue, messages);
        // The batch's messages are done with: the watchdogs carry the rows from here.
        await this.ctx.queue.settleIn(trx, this.kind.queue, calling.flatMap(({ messageId }, i) => (replaced[i] ? [messageId] : [])));
        return replaced;
      });
    calling.forEach((item, i) => {
      if (!handed[i]) return;
      item.work.row.version += 1;
      item.work.row.queueMessageId = watchdogs[i]!;
      item.watchdog = watchdogs[i]!;
      item.log.debug({ watchdog_message_id: watchdogs[i] }, 'attempt let go of: still calling its platform');
    });
    return handed;
  }

  /**
   * Reads the batch's rows, reserves their stores' turns (one statement), postpones the rows whose
   * turn is not near to it without taking them, and takes the rest.
   */
  private async take(messages: AttemptMessage[], dropped: string[]): Promise<Taken<W>[]> {
    const loaded = new Map((await this.attempt.load([...new Set(messages.map((m) => m.rowId))])).map((work) => [work.row.id, work]));
    const now = new Date();
    const candidates: { work: W; log: Logger; messageId: string; trigger: AttemptTrigger; heldAt: Date | null; estimatedAt: Date | null; moved: R; failed: R | null }[] = [];
    const lost: { work: W; log: Logger; messageId: string }[] = [];
    const stale = [...dropped];
    const gone: W[] = [];
    for (const { messageId, rowId, turnAt, estimatedAt } of messages) {
      const log = this.ctx.logger.child({ [this.kind.logKey]: rowId, message_id: messageId });
      const work = loaded.get(rowId);
      // What starts this attempt, read from the row before the LOSE and TAKE change it.
      const trigger = work && triggerOf(work.row.status, work.row.attempts);
      // Moved on a copy: a row whose store's turn is not near is postponed, not moved; one taken (or lost) gets the copy's state.
      const moved = work && { ...work.row };
      const take = moved && trigger && work.row.queueMessageId === messageId ? this.moveOnTake(moved, now, log) : null;
      if (take?.move === 'take') candidates.push({ work: work!, log, messageId, trigger: trigger!, heldAt: turnAt ?? null, estimatedAt: estimatedAt ?? null, moved: moved!, failed: take.failed });
      else if (take?.move === 'lost') {
        this.applyMove(work!, moved!, log);
        lost.push({ work: work!, log, messageId });
      } else {
        stale.push(messageId);
        if (work && estimatedAt) gone.push(work);
        log.debug('stale message ignored');
      }
    }
    // The calls of the attempt about to be made: its targets read from the row as the take leaves it
    // (`attempts` counted), as `perform` will see it. A sync job's retry looks its order up first once
    // the job is over 12 hours old and this is not its first attempt (src/sync-jobs/attempt.ts).
    const turns = await attemptTurns(
      this.ctx.pacer,
      candidates.map(({ work, moved, heldAt, estimatedAt }) => ({ targets: this.attempt.targets({ ...work, row: moved }), heldAt, estimatedAt, urgent: this.attempt.urgent ?? false })),
      this.ctx.logger,
    );
    const reservedAt = performance.now();
    // Not run now: a turn not near, or (beyond the booking horizon) an estimate, nothing booked.
    const runsNow = (i: number) => turns[i]!.estimate === null && turns[i]!.waitMs <= MAX_TURN_WAIT_MS;
    const later = candidates.flatMap(({ work, log, messageId }, i): Postponement[] => {
      if (runsNow(i)) return [];
      const { estimate, at } = turns[i]!;
      return [estimate ? { row: work.row, log, messageId, estimate } : { row: work.row, log, messageId, turnAt: at! }];
    });
    await postponeToTurns(this.ctx, this.kind, later);
    const taking = candidates.flatMap(({ work, log, messageId, trigger, moved, failed }, i) => {
      if (!runsNow(i)) return [];
      const { waitMs } = turns[i]!;
      this.applyMove(work, moved, log);
      return [{ work, log, messageId, failed, timeline: { trigger } as TimelineStep, turnAt: reservedAt + waitMs }];
    });
    // A taken row keeps its message until the attempt's outcome settles it; every other message is done with.
    const writes = [
      ...taking.map(({ work, timeline, messageId }) => ({ ...this.writeOf(work.row, undefined, timeline), message: { id: messageId, settle: 'unwritten' as const } })),
      ...lost.map(({ work, messageId }) => ({ ...this.writeOf(work.row, this.kind.outcomeAudit(work.row, 'worker_lost'), LOST_ATTEMPT), message: { id: messageId, settle: 'always' as const } })),
    ];
    // The rows whose events this statement reports: failures of lost attempts, then deaths.
    const reported = [...taking.map(({ failed }) => failed), ...lost.map(({ work }) => work.row)];
    const moved = reported.some((row) => row !== null) ? await this.writeWithEvents(writes, stale, reported) : await this.write(sqlOf(this.ctx.orm), writes, stale);
    // Stale messages that waited in their stores' lines leave them: nobody else takes those places. Only
    // once they are settled: a batch that fails before (delivered again) would give each place back twice.
    if (gone.length > 0) await leaveLines(this.ctx.pacer, gone.map((work) => this.attempt.targets(work)), this.ctx.logger);
    lost.forEach(({ work, log }, i) => {
      if (!moved[taking.length + i]) return;
      this.counted('dead');
      log.warn({ error: work.row.errorMessage, attempts: work.row.attempts, reason: 'worker_lost' }, 'attempts exhausted: dead');
    });
    const taken = taking.filter(({ log }, i) => {
      if (!moved[i]) log.debug('taken by another worker first');
      return moved[i];
    });
    for (const { work, log, failed } of taken) {
      if (failed) this.counted('failed');
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
   * machine cannot read is left alone, not the whole batch with it. Run on a copy of the row (`take`
   * postpones a row whose store's turn is not near, unmoved), which `applyMove` gives the row.
   */
  private moveOnTake(row: R, now: Date, log: Logger): TakeMove<R> {
    const at = now.toISOString();
    let failed: R | null = null;
    try {
      if (row.status === 'processing') {
        if (!this.kind.transition(row, { type: 'LOSE', at }, now)) return null;
        if ((row.status as AttemptRow['status']) === 'dead') {
          row.queueMessageId = null;
          return { move: 'lost' };
        }
        // Its retry is this delivery, now.
        failed = { ...row, nextRetryAt: now };
      }
      return this.kind.transition(row, { type: 'TAKE', at }, now) ? { move: 'take', failed } : null;
    } catch (error) {
      log.error({ err: error }, 'row state unreadable; message ignored');
      return null;
    }
  }

  /** Gives the row the state `moveOnTake` computed on its copy; a lost attempt is logged here, when it is counted. */
  private applyMove(work: W, moved: R, log: Logger): void {
    if (work.row.status === 'processing') log.warn({ attempts: work.row.attempts }, 'previous attempt lost: counted as failed');
    Object.assign(work.row, moved);
  }

  /** Waits for the row's turn, performs one attempt and records its outcome; false when it could not be recorded. */
  private async run(item: Taken<W>): Promise<boolean> {
    const { work, log, turnAt } = item;
    const waitMs = turnAt - performance.now();
    if (waitMs > 0) await delay(waitMs);
    // The platform calls' excerpts are noted as references and built once, for the last call.
    const calls = captureExchanges(() => this.attempt.perform(work));
    const outcome = await calls.done.then(
      (created): Outcome => ({ ok: true, result: created.id, platformStatus: created.status, detail: this.kind.resultDetail?.of(created) ?? null }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    outcome.exchange = calls.exchange();
    item.called = true;
    // A hand-over that failed (the database) left the row as it was: the outcome is recorded at the version it had.
    if (item.handover) await item.handover;
    // Once handed to a watchdog, the batch's message is settled already and the watchdog is deleted instead.
    return this.record(work.row, outcome, log, item.watchdog ? { watchdog: item.watchdog } : { messageId: item.messageId });
  }

  /**
   * Records the outcome. When it cannot be written for a reason of its own (not an unreachable
   * database), the attempt is recorded as failed with a plain message instead, so the work is
   * retried under the policy rather than its message redelivered until the queue gives up. False
   * when nothing could be recorded: the message is delivered again, and the attempt then counts as lost.
   */
  private async record(row: R, outcome: Outcome, log: Logger, delivery: Delivery): Promise<boolean> {
    const read = { ...row };
    try {
      await this.recordOutcome(row, outcome, log, delivery);
      return true;
    } catch (error) {
      Object.assign(row, read);
      log.error({ err: error }, 'attempt outcome not recorded');
      if (isDatabaseUnavailable(error)) return false;
      const name = error instanceof Error ? error.name : 'unknown';
      try {
        await this.recordOutcome(row, { ok: false, error: new JobFailure(`the attempt's outcome could not be recorded (${name})`) }, log, delivery);
        return true;
      } catch (fallbackError) {
        Object.assign(row, read);
        log.error({ err: fallbackError }, 'attempt failure not recorded either; the message will be delivered again');
        return false;
      }
    }
  }

  /** The outcome's transaction settles the batch's message, or deletes the watchdog the row was handed to when let go of. */
  private async recordOutcome(row: R, outcome: Outcome, log: Logger, delivery: Delivery): Promise<void> {
    const { watchdog } = delivery;
    const now = new Date();
    const at = now.toISOString();
    const event = (
      outcome.ok ? { type: 'SUCCEED', at, [this.kind.lifecycle.resultKey]: outcome.result } : { type: 'FAIL', error: failureMessage(outcome.error), at }
    ) as AttemptEvent<K>;
    if (!this.kind.transition(row, event, now)) return;
    const exchange = outcome.exchange ?? null;
    const timeline: TimelineStep = outcome.ok
      ? { outcome: 'succeeded', platformStatus: outcome.platformStatus, exchange }
      : { outcome: 'failed', platformStatus: outcome.error instanceof PlatformError ? outcome.error.status : null, exchange };

    if (row.status === 'completed' || row.status === 'dead') {
      if (row.status === 'dead') row.queueMessageId = null;
      const write = { ...this.writeOf(row, this.kind.outcomeAudit(row), timeline), detail: outcome.ok ? outcome.detail : null, message: settled(delivery) };
      if (!(await (watchdog ? this.writeOutcomes([write], watchdog).then(([written]) => written!) : this.outcomes.submit(write)))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
      if (row.status === 'completed') log.info({ result: outcome.ok ? outcome.result : null, attempts: row.attempts }, 'attempt completed');
      else log.warn({ error: row.errorMessage, attempts: row.attempts }, 'attempts exhausted: dead');
    } else {
      const { context } = this.kind.restore(row);
      const delayMs = Math.max(this.kind.retryDelayMs(this.ctx.config, context), outcome.ok ? 0 : requestedDelayMs(outcome.error));
      if (!(await this.moveWithMessage(row, timeline, delayMs, delivery))) {
        log.warn({ status: row.status }, 'outcome not recorded: another worker moved the row meanwhile, and its outcome stands');
        return;
      }
      log.warn({ error: row.errorMessage, attempts: row.attempts, retry_in_ms: delayMs }, 'attempt failed; retry scheduled');
    }
    this.counted(row.status);
  }

  /**
   * Writes the transition with a new queue message (the next attempt, after `delayMs`) in one
   * transaction; the row keeps the message's start as its `nextRetryAt`.
   */
  private moveWithMessage(row: R, timeline: TimelineStep, delayMs: number, { watchdog, messageId }: Delivery): Promise<boolean> {
    row.queueMessageId = newMessageId();
    const startAfter = new Date(Date.now() + delayMs);
    row.nextRetryAt = startAfter;
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        const write = { ...this.writeOf(row, undefined, timeline), message: settled({ messageId }) };
        if (!(await this.write(trx, [write]))[0]) return false;
        await this.ctx.queue.insertIn(trx, this.kind.queue, [{ id: row.queueMessageId!, message: this.kind.message(row.id), startAfter }]);
        await this.ctx.outbox.append(trx, await this.kind.outcomeEvents(trx, [row]));
        if (watchdog) await this.ctx.queue.discardIn(trx, this.kind.queue, [watchdog]);
        return true;
      });
  }

  /**
   * Completed and dead rows with their audit entries, timelines and events. A kind that can build
   * its events from the rows alone (`outcomeEventsOf`) writes them in one statement with no
   * transaction around it; the rows that statement leaves (their events need a read or deliveries,
   * or another worker moved the row), those of other kinds and one let go of are written in a
   * transaction (`writeOutcomesIn`).
   */
  private async writeOutcomes(writes: AttemptWrite<R>[], watchdog?: string): Promise<boolean[]> {
    const hooked = Boolean(this.attempt.outcomeLocks || this.attempt.outcomesWrittenIn);
    const inTransaction = (write: AttemptWrite<R>) => hooked && (this.attempt.outcomeInTransaction?.(write.row as RowOf<W>) ?? true);
    const alone = watchdog === undefined && this.kind.outcomeEventsOf;
    const todo = writes.filter((write) => !this.#appliedAlone.has(write) && !inTransaction(write));
    if (alone && todo.length > 0) {
      const written = await this.writeOutcomesAlone(todo);
      todo.forEach((write, i) => written[i] && this.#appliedAlone.add(write));
    }
    const rest = writes.filter((write) => !this.#appliedAlone.has(write));
    const restWritten = new Map(rest.length === 0 ? [] : (await this.writeOutcomesIn(rest, watchdog)).map((done, i) => [rest[i]!, done]));
    return writes.map((write) => this.#appliedAlone.has(write) || restWritten.get(write)!);
  }

  /** One statement: each row with the events built from it, written only when they are all it needs (see `AttemptWrite.events`); its message is settled with it. */
  private writeOutcomesAlone(writes: AttemptWrite<R>[]): Promise<boolean[]> {
    const alone = writes.map((write) => ({
      ...write,
      events: this.kind.outcomeEventsOf!([write.row]),
      message: write.message && { id: write.message.id, settle: 'written' as const },
    }));
    return this.write(sqlOf(this.ctx.orm), alone);
  }

  /**
   * Completed and dead rows with their audit entries and timelines (one statement), and the events of
   * those written, in one transaction; with `watchdog` (one row let go of), its watchdog message deleted too.
   */
  private async writeOutcomesIn(writes: AttemptWrite<R>[], watchdog?: string): Promise<boolean[]> {
    const versions = writes.map(({ row }) => row.version);
    try {
      return await this.writeOutcomesInTransaction(writes, watchdog);
    } catch (error) {
      // Rolled back: each row is at the version it was read at again, which a rewrite of the group
      // item by item (GroupCommit) must present, or it would find every row "moved meanwhile".
      writes.forEach(({ row }, i) => (row.version = versions[i]!));
      throw error;
    }
  }

  private writeOutcomesInTransaction(writes: AttemptWrite<R>[], watchdog?: string): Promise<boolean[]> {
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        await this.holdOutcomeLocks(trx, writes.map(({ row }) => row));
        const written = await this.write(trx, writes);
        const rows = writes.filter((_, i) => written[i]).map(({ row }) => row);
        await this.ctx.outbox.append(trx, await this.kind.outcomeEvents(trx, rows));
        await this.outcomesWrittenIn(trx, rows);
        if (watchdog && written[0]) await this.ctx.queue.discardIn(trx, this.kind.queue, [watchdog]);
        return written;
      });
  }

  private writeOf(row: R, audit?: AttemptWrite<R>['audit'], timeline?: TimelineStep): AttemptWrite<R> {
    return { row, result: this.kind.resultOf(row), audit, timeline };
  }

  /**
   * The take's statement when it also counts lost attempts (`reported[i]`, the row the write `i`
   * reports: a lost attempt's failure, retried by this take, or a row whose last attempt was lost,
   * now `dead`): in a transaction that appends their events (`sync_job.failed`, `sync_job.dead`, …)
   * to the outbox, as the sweep does for the same loss. Rare, so the usual take stays one statement.
   */
  private writeWithEvents(writes: AttemptWrite<R>[], stale: string[], reported: (R | null)[]): Promise<boolean[]> {
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        // The rows now dead are outcomes like any other: under their locks, with the kind's writes.
        await this.holdOutcomeLocks(trx, reported.filter((row): row is R => row?.status === 'dead'));
        const written = await this.write(trx, writes, stale);
        const rows = reported.filter((row, i): row is R => row !== null && written[i] === true);
        if (rows.length > 0) await this.ctx.outbox.append(trx, await this.kind.outcomeEvents(trx, rows));
        await this.outcomesWrittenIn(trx, rows.filter((row) => row.status === 'dead'));
        return written;
      });
  }

  /** The kind's locks for these completed or dead rows (`Attempt.outcomeLocks`), taken before they are written. */
  private async holdOutcomeLocks(trx: Trx, rows: R[]): Promise<void> {
    const locks = this.attempt.outcomeLocks?.(rows as RowOf<W>[]) ?? [];
    if (locks.length > 0) await holdLocks(trx, locks);
  }

  /** The kind's writes for these completed or dead rows once written (`Attempt.outcomesWrittenIn`). */
  private async outcomesWrittenIn(trx: Trx, rows: R[]): Promise<void> {
    if (rows.length > 0) await this.attempt.outcomesWrittenIn?.(trx, rows as RowOf<W>[]);
  }

  /** Writes the transitions, settling the queue messages they name and `stale` ones. */
  private write(db: Db | Trx, writes: AttemptWrite<R>[], stale: string[] = []): Promise<boolean[]> {
    return writeAttemptTransitions(db, this.kind, writes, { queue: this.kind.queue.name, also: stale });
  }

  private counted(status: string): void {
    this.ctx.metrics.attemptTransitions.inc({ kind: this.kind.name, status });
  }
}
