import { MAX_AUTO_RETRIES } from '../../machines/attempt.machine.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import { sqlOf, type Trx } from '../db/sql.ts';
import { newMessageId } from '../queue/queue.ts';
import { every } from '../shared/periodic.ts';
import type { Attempt, AttemptKind, AttemptRow, AttemptRuntime, DeathReason } from './kind.ts';
import { holdLocks, takeTurn } from '../db/locks.ts';
import { findStranded, writeAttemptTransitions, type AttemptWrite } from './repository.ts';
import { LOST_ATTEMPT } from './worker.ts';

/** Rows of each kind one pass moves at most; the next pass takes the rest. */
const ROWS_PER_PASS = 500;

export const DELIVERY_EXHAUSTED_ERROR = `abandoned: its queue message was delivered ${MAX_AUTO_RETRIES + 1} times without an outcome being recorded`;

type AnyKind = AttemptKind<AttemptRow, string, object, { row: AttemptRow }, never>;

/** A kind as the sweep is handed it: its definition and what reads its rows (`attempt.load`). */
export interface SweptKind {
  kind: AnyKind;
  attempt: Pick<Attempt<{ row: AttemptRow }>, 'load' | 'outcomeLocks' | 'outcomesWrittenIn'>;
}

/**
 * Work a feature does after each pass that moved anything or not (e.g. claiming held
 * fulfillments); each returns counts that join the pass's report.
 */
export type SweepHook = () => Promise<Record<string, number>>;

/** What the sweep did to one row. */
type Rescue = { action: 'requeued' | 'lost'; startAfter: Date } | { action: 'dead'; reason: DeathReason };

/** A stranded row and its rescue, with the audit entry of a death. */
interface PlannedRescue {
  row: AttemptRow;
  rescue: Rescue;
  audit?: AuditRecord;
}

/** What a pass does to one kind's stranded rows. */
interface SweepPlan {
  swept: SweptKind;
  rescues: PlannedRescue[];
}

export interface SweepCounts {
  /** Rows re-enqueued as they were (their message was gone). */
  requeued: number;
  /** Attempts found lost (processing, no worker): failed, and retried. */
  lost: number;
  /** Rows moved to dead (`delivery_exhausted`, or lost on their last retry: `worker_lost`). */
  dead: number;
}

/** What a pass did: the rows it moved, and what its hooks report (the fulfillments' `claimed`, `forgotten`). */
export type SweepReport = SweepCounts & Record<string, number>;

/**
 * Keeps the invariant of operations.md ("No job stranded"): every pending, processing or failed
 * sync job and fulfillment has a live queue message that will move it. Each pass, in one process at
 * a time (a transaction-scoped advisory lock), it looks at unfinished rows untouched for longer
 * than the platform timeout plus one sweep interval (a failed row: whose retry was due that long ago;
 * one waiting for a later retry is not read) whose message is no longer live, and:
 * - message failed (pg-boss delivered it as often as the policy allows, never with an outcome
 *   recorded): ABANDON, dead, audit `…dead` with `metadata.reason: delivery_exhausted`;
 * - processing (its worker is gone, so is its message): the attempt was lost, LOSE: failed and
 *   retried under the policy, or dead with `reason: worker_lost` when it was the last retry;
 * - pending or failed (the message is gone): a new message, at once.
 * Every write is conditional on the version read, like a worker's, and commits with its message
 * and audit entry. Then its hooks run (the fulfillments feature claims held fulfillments for the
 * jobs that completed with their order). It knows no kind: it is handed them, and the hooks.
 */
export class Sweeper {
  constructor(
    private readonly ctx: AttemptRuntime,
    private readonly kinds: readonly SweptKind[],
    private readonly hooks: readonly SweepHook[] = [],
  ) {}

  /** How long a row can go untouched without a live message before the sweep counts it stranded. */
  get strandedAfterMs(): number {
    return this.ctx.config.platformTimeoutMs + this.ctx.config.sweepIntervalMs;
  }

  /** One pass; null when another process had the turn. */
  async sweepOnce(now = new Date()): Promise<SweepReport | null> {
    const staleBefore = new Date(now.getTime() - this.strandedAfterMs);
    const report = await sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        if (!(await takeTurn(trx, 'attempts.sweep'))) return null;
        const counts = { requeued: 0, lost: 0, dead: 0 };
        const plans: SweepPlan[] = [];
        for (const swept of this.kinds) plans.push({ swept, rescues: await this.rescuesOf(trx, swept, staleBefore, now) });
        // Rows moved to dead are outcomes like the worker's, under their kind's locks. Every kind's are
        // taken before any row is written, as every other holder of them does (locks, then rows).
        const locks = plans.flatMap(({ swept, rescues }) => swept.attempt.outcomeLocks?.(rescues.filter(({ rescue }) => rescue.action === 'dead').map(({ row }) => row)) ?? []);
        if (locks.length > 0) await holdLocks(trx, locks);
        for (const plan of plans) await this.apply(trx, plan, counts);
        return counts;
      });
    if (!report) return null;
    let reported: SweepReport = report;
    for (const hook of this.hooks) reported = { ...reported, ...(await hook()) };
    return reported;
  }

  /** A kind's stranded rows, each with what to do with it (applied to the row, not yet written). */
  private async rescuesOf(trx: Trx, { kind, attempt }: SweptKind, staleBefore: Date, now: Date): Promise<PlannedRescue[]> {
    const stranded = new Map((await findStranded(trx, kind.table, kind.queue.name, staleBefore, ROWS_PER_PASS)).map((row) => [row.id, row]));
    if (stranded.size === 0) return [];
    const rescues: PlannedRescue[] = [];
    for (const { row } of await attempt.load([...stranded.keys()])) {
      const seen = stranded.get(row.id)!;
      // Moved since it was found (a manual retry, a late worker): no longer stranded.
      if (row.version !== seen.version) continue;
      const rescue = this.rescue(kind, row, seen.messageState, now);
      if (!rescue) continue;
      rescues.push({ row, rescue, ...(rescue.action === 'dead' && { audit: kind.outcomeAudit(row, rescue.reason) }) });
    }
    return rescues;
  }

  /** Writes a kind's rescues (version-checked), their events and queue messages, and runs its hooks for the rows now dead. */
  private async apply(trx: Trx, { swept: { kind, attempt }, rescues }: SweepPlan, counts: SweepCounts): Promise<void> {
    if (rescues.length === 0) return;
    // A lost or abandoned attempt's timeline entry, if one is open, is closed as failed.
    const writes: AttemptWrite[] = rescues.map(({ row, rescue, audit }) => ({
      row,
      result: kind.resultOf(row),
      audit,
      ...(rescue.action !== 'requeued' && { timeline: LOST_ATTEMPT }),
    }));
    const written = await writeAttemptTransitions(trx, kind, writes);
    const moved = rescues.filter((_, i) => written[i]);
    // The events of the rows this pass settled or failed (sync_job.dead, .failed, …), in this
    // transaction beside their audit entries, as the worker's transitions do.
    const settled = moved.filter(({ rescue }) => rescue.action !== 'requeued').map(({ row }) => row);
    if (settled.length > 0) await this.ctx.outbox.append(trx, await kind.outcomeEvents(trx, settled));
    const dead = moved.filter(({ rescue }) => rescue.action === 'dead').map(({ row }) => row);
    if (dead.length > 0) await attempt.outcomesWrittenIn?.(trx, dead);
    const messages = moved.flatMap(({ row, rescue }) =>
      rescue.action === 'dead' ? [] : [{ id: row.queueMessageId!, message: kind.message(row.id), startAfter: rescue.startAfter }],
    );
    await this.ctx.queue.insertIn(trx, kind.queue, messages);
    for (const { row, rescue } of moved) {
      counts[rescue.action]++;
      this.ctx.metrics.sweepRescues.inc({ kind: kind.name, action: rescue.action });
      if (rescue.action !== 'requeued') this.ctx.metrics.attemptTransitions.inc({ kind: kind.name, status: row.status });
      this.ctx.logger.warn(
        { [kind.logKey]: row.id, status: row.status, attempts: row.attempts, ...rescue },
        rescue.action === 'dead' ? 'stranded: dead' : rescue.action === 'lost' ? 'stranded: attempt lost, retry scheduled' : 'stranded: queued again',
      );
    }
  }

  /** What to do with one stranded row (applied to it); null when the machine cannot read or move it. */
  private rescue(kind: AnyKind, row: AttemptRow, messageState: string | null, now: Date): Rescue | null {
    const at = now.toISOString();
    try {
      if (messageState === 'failed') {
        if (!kind.transition(row, { type: 'ABANDON', error: DELIVERY_EXHAUSTED_ERROR, at }, now)) return null;
        row.queueMessageId = null;
        return { action: 'dead', reason: 'delivery_exhausted' };
      }
      if (row.status === 'processing') {
        if (!kind.transition(row, { type: 'LOSE', at }, now)) return null;
        if ((row.status as AttemptRow['status']) === 'dead') {
          row.queueMessageId = null;
          return { action: 'dead', reason: 'worker_lost' };
        }
        row.queueMessageId = newMessageId();
        row.nextRetryAt = new Date(now.getTime() + kind.retryDelayMs(this.ctx.config, kind.restore(row).context));
        return { action: 'lost', startAfter: row.nextRetryAt };
      }
      kind.restore(row); // throws when its state cannot be read: such a row is left alone
      row.queueMessageId = newMessageId();
      row.updatedAt = now;
      // A failed row's retry, whose message was lost, is due at once.
      row.nextRetryAt = now;
      return { action: 'requeued', startAfter: now };
    } catch (error) {
      this.ctx.logger.error({ err: error, [kind.logKey]: row.id }, 'stranded row state unreadable; left alone');
      return null;
    }
  }
}

/**
 * Runs a sweep every SWEEP_INTERVAL_MS in this (worker) process; processes that run at the same
 * time take turns. Returns a function that stops the passes and waits for one in progress.
 */
export function startSweeper(ctx: AttemptRuntime, kinds: readonly SweptKind[], hooks: readonly SweepHook[]): () => Promise<void> {
  const sweeper = new Sweeper(ctx, kinds, hooks);
  return every(ctx.config.sweepIntervalMs, () =>
    sweeper
      .sweepOnce()
      .then((report) => {
        if (report && Object.values(report).some((count) => count > 0)) ctx.logger.info({ sweep: report }, 'sweep moved stranded work');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'sweep failed; trying again next interval')),
  );
}
