import { setTimeout as delay } from 'node:timers/promises';
import { syncJobLifecycle } from '../../machines/sync-job.machine.ts';
import type { CancellationOutcome } from '../../contract/enums.ts';
import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import { JobFailure } from '../attempts/failure.ts';
import type { Attempt, DeathReason } from '../attempts/kind.ts';
import { connectionOf, callsTo } from '../attempts/store-connection.ts';
import type { Config } from '../config/index.ts';
import type { Trx } from '../db/sql.ts';
import type { Outbox } from '../events/outbox.ts';
import type { EventType, NewEvent } from '../events/types.ts';
import { PlatformError, type LineToCancel, type PlatformAdapter, type PlatformAdapters, type StoreConnection, type SupplierLine, type SupplierOrderLineState, type SupplierOrderState } from '../platforms/types.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { jobAuditRecord } from '../sync-jobs/attempt.ts';
import { shownSku, type Cancellation, type CancelledLine } from './entity.ts';
import { cancellationsIn, type CancellationRepository, type CancellationWork } from './repository.ts';
import { jobEventsIn } from './events.ts';
import type { CancelledJobs, DivergenceRaising, RecordedShipments, SupplierSuccessors } from './ports.ts';
import { acceptedThenShipped, endsWholeOrder, shippedAnywayIn, shippedAnywayReason, WHOLE_FOR_LINES } from './too-late.ts';
import { cancellationAuditRecord } from './audit.ts';
import { placedJobLockKey } from '../sync-jobs/placed-lock.ts';
import { CUT_BEFORE_PLACEMENT, cutOrder } from './cut.ts';
import { supplierSku } from '../pricing/index.ts';
import { answeringFor } from '../source-stores/former-records.ts';

/** A cut whose job or cancellation moved meanwhile: its transaction is rolled back. */
class CutLost extends Error {}

/** What voiding jobs never placed writes with (the cancellations' service and attempt). */
export interface JobVoiding {
  /** The sync jobs' repository, through this feature's port. */
  cancelledJobs: CancelledJobs;
  outbox: Outbox;
}

/** What a cancellation's attempt needs, built once per process (src/workers/kinds.ts hands them over). */
export interface CancellationAttemptDeps extends JobVoiding {
  cancellationRepository: CancellationRepository;
  /** Fulfillments recorded while a cancellation was in flight make its outcome `too_late`. */
  shipments: RecordedShipments;
  divergences: DivergenceRaising;
  platforms: PlatformAdapters;
  secrets: SecretBox;
  config: Pick<Config, 'platformTimeoutMs'>;
  /**
   * Records the supplier order a lookup by reference found for a job ended unplaced (VOID), and
   * re-opens the job's whole-order cancellation if it is dead: src/cancellations/service.ts
   * `recordFoundOrderOfVoided`, handed in by the composition root.
   */
  voidedOrders: { recordFoundOrderOfVoided(job: SyncJob, found: { sourceOrderId: string; foundByCancellationId: string }): Promise<{ recorded: boolean; reopened: boolean }> };
  /** The active record that answers for a job's deleted supplier record (a supplier deleted and created again). */
  supplierSuccessors: SupplierSuccessors;
}

/**
 * The turns of the source store an attempt waits for before it is taken: the cancel call of a whole
 * order (its read only follows a refusal, or comes first where the cancel overwrites the status);
 * the order's read (its calls) and the cancel call of some lines.
 */
const callsOf = (cancellation: Cancellation, platform: PlatformAdapter) => (cancellation.scope === 'order' && !platform.cancelOverwritesStatus ? 1 : platform.readCalls + 1);
/**
 * The turns to wait for before the attempt is taken: none when, as the row and its job stand then, no
 * supplier call is expected (the job was never attempted, or the cancellation already cut it): the
 * attempt ends it at once, even while the supplier is paused or busy, and books no turn it would not
 * use. Should a placement take the job meanwhile, the calls that follow reserve their turns inline.
 */
const turnsOf = (work: CancellationWork, platform: PlatformAdapter) =>
  work.row.reason === CUT_BEFORE_PLACEMENT || (work.job !== null && neverAttempted(work.job)) ? 0 : callsOf(work.row, platform);
/** The job never sent an order to its supplier: nothing there to cancel. */
const neverAttempted = (job: SyncJob) => job.sourceOrderId == null && job.attempts === 0;
/**
 * How long a call beyond those turns (the read after a refusal, a refund of the rest, a lookup) waits
 * for its own turn of a busy store before the attempt fails: long, since failing spends a retry and
 * the retry's cancel is refused the same way, so a backlog could otherwise turn `too_late` into `dead`.
 * A slow attempt is let go of by its batch (src/attempts/worker.ts), so the wait holds no consumer.
 */
const EXTRA_CALL_TURN_WAIT_MS = 60_000;
/** How long an attempt waits for a placement in flight to finish before it fails (and is retried). */
const IN_FLIGHT_POLL_MS = 100;

/** What an attempt decided, and what its outcome needs said. */
interface Decision {
  outcome: CancellationOutcome;
  reason: string | null;
  /** The supplier lines this cancellation ends up covering, when they differ from those asked. */
  lines?: CancelledLine[];
  /** Some lines cancelled, and nothing of the supplier order is left open or shipped (`Cancellation.closesOrder`). */
  closesOrder?: boolean;
  /** The HTTP status of the call that decided it; null when no call was needed. */
  platformStatus: number | null;
}

/** Lines in a reason, by the SKU the supplier holds them under (as the API shows a cancellation's lines). */
const describeLines = (lines: CancelledLine[]) => lines.map((line) => `${shownSku(line)} × ${line.quantity}`).join(', ');

/** The Idempotency-Key of a cancellation's calls: a repeat after a lost answer changes nothing more. */
export const cancellationKey = (cancellation: Cancellation, call: string) => `cancellation:${cancellation.id}:${call}`;

/**
 * One attempt of a cancellation: find where the supplier order stands and act on it
 * (order-changes.md, "A cancellation, per affected job"):
 * - the job's placement is in flight: wait for it to finish (then cancel what it created);
 * - the job was never placed: `not_placed`, unless an attempt may have created the order without
 *   the service learning it, in which case it is looked up by the reference the service attached
 *   among the supplier's orders created since the job was created, never by creating it;
 * - the order exists: cancel it (or those lines); a refusal is read as `too_late` when the order
 *   shows it shipped; lines still open on platform_b (which cannot cancel some lines alone): `unsupported`.
 */
export function cancelSupplierOrder(ctx: CancellationAttemptDeps): Attempt<CancellationWork> {
  const repository = ctx.cancellationRepository;
  const jobs = ctx.cancelledJobs;

  /** The job once no attempt of it is in flight; fails the attempt (to be retried) when one stays in flight too long. */
  async function settledJob(work: CancellationWork): Promise<SyncJob> {
    const deadline = Date.now() + ctx.config.platformTimeoutMs * 2;
    let job = work.job;
    for (;;) {
      if (!job) throw new JobFailure('the sync job no longer exists');
      if (job.status !== 'processing') return job;
      if (Date.now() > deadline) throw new JobFailure('the placement of the supplier order is still in flight; the cancellation follows it');
      await delay(IN_FLIGHT_POLL_MS);
      job = await jobs.findCurrent(job.id);
    }
  }

  /** Ends a job that was never placed (pending, failed, dead) as completed without an order; false when it moved meanwhile. */
  async function voidJob(job: SyncJob): Promise<boolean> {
    const now = new Date();
    if (!syncJobLifecycle.canApply({ status: job.status, context: contextOf(job) }, { type: 'VOID', at: now.toISOString() })) return false;
    const [written] = await repository.transaction(async (trx) => {
      const moved = await voidJobsIn(ctx, trx, [job], now);
      return moved;
    });
    return written ?? false;
  }

  /**
   * Removes the cancellation's quantities from a job not placed yet, and marks the cancellation cut in
   * the same transaction, so an attempt retried after it (its outcome not recorded) never cuts twice.
   * False when the job moved meanwhile (version-checked) or the cancellation is no longer held:
   * nothing is written then.
   */
  async function cutJob(job: SyncJob, cancellation: Cancellation, vendorTag: string | null): Promise<boolean> {
    const order = cutOrder(job.order!, cancellation.lines, vendorTag);
    return repository
      .transaction(async (trx) => {
        if (!(await jobs.replaceOrderIn(trx, { ...job, order })) || !(await repository.markCut(trx, cancellation.id, CUT_BEFORE_PLACEMENT))) throw new CutLost();
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof CutLost) return false;
        throw error;
      });
  }

  /**
   * No supplier order exists. A job cut by some lines is placed without them when it is next
   * attempted (its stored order cut here), also when it was never attempted: the signal's own cut
   * (src/cancellations/service.ts) lost a race with a change of the job and left it to this attempt.
   */
  async function notPlaced(cancellation: Cancellation, job: SyncJob, source: SourceStore | null, reason: string | null): Promise<Decision> {
    if (cancellation.reason === CUT_BEFORE_PLACEMENT) return { outcome: 'not_placed', reason: CUT_BEFORE_PLACEMENT, platformStatus: null };
    if (cancellation.scope === 'lines' && job.status !== 'completed' && job.order) {
      if (!(await cutJob(job, cancellation, source?.vendorTag ?? null))) throw new JobFailure('the sync job changed while it was being cut; trying again');
      return { outcome: 'not_placed', reason: CUT_BEFORE_PLACEMENT, platformStatus: null };
    }
    return { outcome: 'not_placed', reason, platformStatus: null };
  }

  /** The supplier order the job may have created without learning it, looked up by its reference. */
  async function orderInDoubt(job: SyncJob, platform: PlatformAdapter, store: StoreConnection): Promise<string | null> {
    if (job.attempts === 0) return null;
    // Not found ends the cancellation not_placed: a lookup cut short by its page bound must fail instead.
    return platform.findOrderByReference(store, job.id, job.createdAt, 'fail');
  }

  async function decide(work: CancellationWork): Promise<Decision> {
    const { row: cancellation, source } = work;
    let job = await settledJob(work);
    if (job.status !== 'completed' && cancellation.scope === 'order') {
      if (!(await voidJob(job))) throw new JobFailure('the sync job changed while it was being cancelled; trying again');
      job = (await jobs.findCurrent(job.id))!;
    }
    if (neverAttempted(job)) return notPlaced(cancellation, job, source, null);
    if (!source) throw new JobFailure('the source store was deleted');
    const platform = ctx.platforms[source.platform];
    const store = { ...connectionOf(ctx, source, turnsOf(work, platform)), maxTurnWaitMs: EXTRA_CALL_TURN_WAIT_MS };
    const orderId = job.sourceOrderId ?? (await orderInDoubt(job, platform, store));
    if (!orderId) return notPlaced(cancellation, job, source, 'no order carrying the job\'s reference was found on the source store');
    // Another cancellation of the job (whole-order) may have died looking for it: it is re-opened to cancel it.
    if (job.sourceOrderId == null && job.status === 'completed') await ctx.voidedOrders.recordFoundOrderOfVoided(job, { sourceOrderId: orderId, foundByCancellationId: cancellation.id });
    return cancellation.scope === 'order' ? cancelOrder(cancellation, job, platform, store, orderId) : cancelLines(cancellation, job, platform, store, orderId, source);
  }

  /**
   * Where the job's supplier order stands (what is shipped, cancelled, still open), its lines named
   * by the supplier line ids the job kept from the create answer. A job that kept none (placed before
   * they were kept, or found by its reference after a lost answer) keeps the lines read now.
   */
  async function readOrder(job: SyncJob, platform: PlatformAdapter, store: StoreConnection, orderId: string): Promise<SupplierOrderState> {
    const state = await platform.readSupplierOrder(store, orderId);
    if (job.supplierLines) return withKeptLineIds(state, job.supplierLines);
    // Lines without ids (custom names its lines by SKU) are nothing to keep.
    if (state.lines.some((line) => line.lineId !== null)) await jobs.keepSupplierLines(job.id, state.lines.map(({ lineId, sku, quantity }) => ({ lineId, sku, quantity })));
    return state;
  }

  /** Reads the order after a refusal: shipped means too late; anything else is the refusal itself. */
  async function refusal(error: unknown, platform: PlatformAdapter, store: StoreConnection, orderId: string, asked: CancelledLine[]): Promise<Decision> {
    if (!isRefusal(error)) throw error;
    const state = await platform.readSupplierOrder(store, orderId);
    if (state.cancelled) return { outcome: 'cancelled', reason: null, platformStatus: error.status };
    if (state.fulfillment === 'none' && error.status !== 409) throw error;
    const shipped = shippedOf(state, asked);
    return { outcome: 'too_late', reason: `already shipped by the supplier: ${describeLines(shipped.length > 0 ? shipped : asked)}`, platformStatus: error.status };
  }

  /**
   * The whole order: the cancel call first, the order read only when the supplier refuses (every
   * platform refuses to cancel a shipped order, platforms.md; platform_a's refusal does not say why),
   * so the usual cancellation costs the supplier one call, not two. A platform whose cancel sets the
   * status whatever it was (`cancelOverwritesStatus`) is read first, so an order it shows refunded,
   * cancelled or shipped is left as it is.
   */
  async function cancelOrder(cancellation: Cancellation, job: SyncJob, platform: PlatformAdapter, store: StoreConnection, orderId: string): Promise<Decision> {
    if (platform.cancelOverwritesStatus) {
      const state = await readOrder(job, platform, store, orderId);
      if (state.cancelled || state.fulfillment !== 'none') return fromOrderState(state, 200, cancellation, platform, store, orderId);
    }
    try {
      const { status } = await platform.cancelSupplierOrder(store, orderId, cancellationKey(cancellation, 'order'));
      return { outcome: 'cancelled', reason: null, platformStatus: status };
    } catch (error) {
      if (!isRefusal(error)) throw error;
      const state = await readOrder(job, platform, store, orderId);
      if (state.cancelled || state.fulfillment !== 'none') return fromOrderState(state, error.status, cancellation, platform, store, orderId);
      // custom's 409 names fulfilled quantities its order does not show: the rest is still cancelled.
      const fulfilled = platform.fulfilledIn?.(error);
      if (fulfilled?.length) return fromOrderState(withFulfilled(state, fulfilled), error.status, cancellation, platform, store, orderId);
      // Any other refusal is unexplained.
      if (error.status !== 409) throw error;
      return { outcome: 'too_late', reason: `already shipped by the supplier: ${describeLines(cancellation.lines)}`, platformStatus: error.status };
    }
  }

  /**
   * An order found cancelled (`cancelled`), shipped (`too_late`) or partly shipped (its open quantities
   * cancelled, `too_late` naming the shipped lines); `status` is that of the call that found it so.
   */
  async function fromOrderState(state: SupplierOrderState, status: number | null, cancellation: Cancellation, platform: PlatformAdapter, store: StoreConnection, orderId: string): Promise<Decision> {
    if (state.cancelled) return { outcome: 'cancelled', reason: null, platformStatus: status };
    const shipped = shippedOf(state, cancellation.lines);
    if (state.fulfillment === 'full') return { outcome: 'too_late', reason: `already shipped by the supplier: ${describeLines(shipped)}`, platformStatus: status };
    // Only what is still open can be cancelled (platform_a: a refund with restock_type cancel).
    return cancelTheRest(cancellation, platform, store, orderId, openLines(state), shipped, status);
  }

  /**
   * Some of what was asked shipped: `rest` (what is still open of it) is cancelled, and the outcome is
   * `too_late` naming the `shipped` lines and the rest cancelled; a refusal of the rest is read as any.
   */
  async function cancelTheRest(cancellation: Cancellation, platform: PlatformAdapter, store: StoreConnection, orderId: string, rest: LineToCancel[], shipped: CancelledLine[], status: number | null): Promise<Decision> {
    let platformStatus = status;
    if (rest.length > 0 && platform.cancelSupplierLines) {
      try {
        platformStatus = (await platform.cancelSupplierLines(store, orderId, rest, cancellationKey(cancellation, 'open-lines'))).status;
      } catch (error) {
        return refusal(error, platform, store, orderId, cancellation.lines);
      }
    }
    const cancelled = rest.map(({ sku, quantity }) => ({ sku, quantity }));
    return {
      outcome: 'too_late',
      reason: `already shipped by the supplier: ${describeLines(shipped)}${cancelled.length > 0 ? `; the rest was cancelled: ${describeLines(cancelled)}` : ''}`,
      platformStatus,
    };
  }

  /**
   * Lines refused because some of them shipped, the supplier's refusal naming what (custom's 409, whose
   * order shows no fulfilled quantities): what is still open of the lines asked is cancelled, and the
   * outcome is `too_late` naming the shipped lines, as for a partly shipped platform_a order.
   */
  async function cancelUnfulfilledLines(cancellation: Cancellation, platform: PlatformAdapter, store: StoreConnection, orderId: string, source: SourceStore, state: SupplierOrderState, refusedWith: number | null): Promise<Decision> {
    const { toCancel, shipped } = linesToCancel(state, cancellation.lines, source);
    return cancelTheRest(cancellation, platform, store, orderId, toCancel, shipped.length > 0 ? shipped : shippedOf(state, cancellation.lines), refusedWith);
  }

  /**
   * Whether these lines and those the storefront asked of the job before that its supplier still
   * holds (cancellations of some lines ended `unsupported`, or still being made or dead) leave
   * nothing of the supplier order open, nothing of it shipped: every line the supplier holds was
   * cancelled at the storefront, so the whole order can go (order-changes.md: "a job whose every line
   * is cancelled is cancelled as a whole"), though each signal asked for some lines only. One read,
   * on a platform that cannot cancel some lines alone only.
   */
  async function everyOpenLineAsked(cancellation: Cancellation, job: SyncJob, state: SupplierOrderState, source: SourceStore): Promise<boolean> {
    const stillHeld = (other: Cancellation) =>
      other.id !== cancellation.id && other.scope === 'lines' && other.reason !== CUT_BEFORE_PLACEMENT && (other.status !== 'completed' || other.outcome === 'unsupported');
    const earlier = (await repository.listForJob(job.id)).filter(stillHeld);
    if (earlier.length === 0) return false;
    return leavesNothingOpen(state, linesToCancel(state, [...cancellation.lines, ...earlier.flatMap((other) => other.lines)], source).toCancel);
  }

  /** The whole supplier order cancelled for lines that, with those asked before, are all of it (`everyOpenLineAsked`). */
  async function cancelWholeForLines(cancellation: Cancellation, platform: PlatformAdapter, store: StoreConnection, orderId: string): Promise<Decision> {
    const reason = `${WHOLE_FOR_LINES}; ${platform.platform} cannot cancel some lines only, so the whole order was cancelled`;
    // Kept before the call: a retry whose read finds the order cancelled (this call's answer lost) knows it was this one.
    if (!(await repository.recordIntent(cancellation.id, reason))) throw new JobFailure('the cancellation moved while it was being made; trying again');
    cancellation.reason = reason;
    try {
      const { status } = await platform.cancelSupplierOrder(store, orderId, cancellationKey(cancellation, 'order'));
      return { outcome: 'cancelled', reason, platformStatus: status, closesOrder: true };
    } catch (error) {
      return refusal(error, platform, store, orderId, cancellation.lines);
    }
  }

  /**
   * Some lines: the supplier order is read first, whatever the platform, so the outcome says where it
   * stands (cancelled, shipped); only lines still open on a platform that cannot cancel some lines
   * alone are `unsupported`.
   */
  async function cancelLines(cancellation: Cancellation, job: SyncJob, platform: PlatformAdapter, store: StoreConnection, orderId: string, source: SourceStore): Promise<Decision> {
    const state = await readOrder(job, platform, store, orderId);
    // Found cancelled by a retry of one that cancelled the order whole (its answer lost): still that one.
    const wholeBefore = cancellation.reason?.startsWith(WHOLE_FOR_LINES) ? cancellation.reason : null;
    if (state.cancelled) return { outcome: 'cancelled', reason: wholeBefore, platformStatus: 200, closesOrder: true };
    const { toCancel, shipped, missing } = linesToCancel(state, cancellation.lines, source);
    if (!platform.cancelSupplierLines && toCancel.length > 0) {
      if (shipped.length === 0 && (await everyOpenLineAsked(cancellation, job, state, source))) return cancelWholeForLines(cancellation, platform, store, orderId);
      // Only what is still open is for the reseller to cancel by hand; what shipped is said apart.
      const open = describeLines(toCancel.map(({ sku, quantity }) => ({ sku, quantity })));
      const reason = [`${platform.platform} cannot cancel some lines of an order only; cancel these by hand: ${open}`, shipped.length > 0 && `already shipped by the supplier: ${describeLines(shipped)}`];
      return { outcome: 'unsupported', reason: reason.filter(Boolean).join('; '), platformStatus: 200 };
    }
    let status: number | null = 200;
    if (toCancel.length > 0 && platform.cancelSupplierLines) {
      try {
        status = (await platform.cancelSupplierLines(store, orderId, toCancel, cancellationKey(cancellation, 'lines'))).status;
      } catch (error) {
        if (!isRefusal(error)) throw error;
        const fulfilled = platform.fulfilledIn?.(error);
        if (!fulfilled?.length) return refusal(error, platform, store, orderId, cancellation.lines);
        return cancelUnfulfilledLines(cancellation, platform, store, orderId, source, withFulfilled(state, fulfilled), error.status);
      }
    }
    // Never `cancelled` for lines that were not: they go to the reseller's to-do list.
    const notFound = missing.length > 0 ? `the supplier order has no line for ${describeLines(missing)} (its SKU may have changed since it was placed): cancel it by hand` : null;
    if (shipped.length > 0) {
      return { outcome: 'too_late', reason: [`already shipped by the supplier: ${describeLines(shipped)}`, notFound].filter(Boolean).join('; '), platformStatus: status };
    }
    if (notFound) return { outcome: 'unsupported', reason: notFound, platformStatus: status };
    return { outcome: 'cancelled', reason: null, platformStatus: status, closesOrder: leavesNothingOpen(state, toCancel) };
  }

  return {
    /**
     * The cancellations, each with its job and the job's source store: when that record was deleted,
     * the active record of the same supplier that answers for it (`SupplierSuccessors`: a supplier
     * deleted and created again, whose orders placed through the old record are still open), else null.
     */
    async load(ids) {
      const rows = await repository.findByIds(ids);
      const found = new Map((await jobs.loadWithSources([...new Set(rows.map((row) => row.syncJobId))])).map((work) => [work.row.id, work]));
      const orphaned = [...new Set([...found.values()].filter((work) => work.source === null).map((work) => work.row.sourceStoreId))];
      const successors = orphaned.length > 0 ? await ctx.supplierSuccessors.successorsOf(orphaned) : new Map<string, { former: SourceStore; active: SourceStore }>();
      const sourceOf = (row: Cancellation, job: SyncJob | null, source: SourceStore | null): SourceStore | null => {
        if (source || !job) return source;
        const successor = successors.get(job.sourceStoreId);
        if (!successor) return null;
        answeredBy.set(row, successor.active.id);
        return answeringFor(successor.former, successor.active);
      };
      return rows.map((row) => {
        const work = found.get(row.syncJobId);
        return { row, job: work?.row ?? null, source: sourceOf(row, work?.row ?? null, work?.source ?? null) };
      });
    },

    /**
     * The source store's turns for the calls an attempt usually makes (`callsOf`), waited for before
     * the row is taken, so a store with a backlog postpones the cancellation without spending an
     * attempt; a rarer call (a read after a refusal, a lookup, a refund of the rest) reserves its own.
     */
    targets: (work) => (work.source ? callsTo(ctx, work.source, turnsOf(work, ctx.platforms[work.source.platform])) : []),

    /**
     * Every attempt books the supplier's next turn, never deferred behind the store's backlog
     * (src/pacing/): ordinary work is booked at most the booking horizon ahead, so a cancellation
     * reaches the supplier within about that, however many placements wait, while it could still stop
     * the order. Its other calls (the read after a refusal, a lookup) reserve their turn inline, the same way.
     */
    urgent: true,

    async perform(work) {
      const decision = await decide(work);
      if (decision.reason !== work.row.reason || decision.lines || decision.closesOrder) {
        await repository.recordDetail(work.row.id, work.row.version, {
          reason: decision.reason,
          ...(decision.lines && { lines: decision.lines }),
          ...(decision.closesOrder && { closesOrder: true }),
        });
      }
      work.row.reason = decision.reason;
      if (decision.closesOrder) work.row.closesOrder = true;
      return { id: decision.outcome, status: decision.platformStatus };
    },

    /**
     * A whole order cancelled (or found never placed), or a whole-order cancellation dead (by the worker,
     * its lost last attempt or the sweep), is written under its job's placed-job lock, which a
     * fulfillment's recording holds too: tracking recorded while the cancel call was in flight (its own
     * check then saw the cancellation still being made) is committed and found here.
     */
    outcomeLocks: (rows) => rows.filter((row) => endsWholeOrder(row) || diesWholeOrder(row)).map((row) => placedJobLockKey(row.syncJobId)),

    /**
     * A whole order cancelled (or its last open lines) while a fulfillment of it was recorded: `too_late`;
     * so is the cancellation before a dead whole-order one that ended the order (see `shippedAnywayIn`).
     * Else nothing of the supplier order is left to cancel: the job's entries about cancelling some of
     * it (a cancellation that died, lines its platform could not cancel alone) are resolved, as nothing
     * is left for the reseller to do about them; and when the storefront cancelled the job's whole part
     * (scope `order`), so is its `supplier_cancelled` entry (not for some lines: the rest still needs them).
     */
    async outcomesWrittenIn(trx, rows) {
      // A whole-order cancellation that dies was the one a fulfillment recorded meanwhile left the
      // shipment to (`shippedAnywayIn` waits for one still being made): it is reported now, on the
      // cancellation before it that ended the order (one asked again after a `not_placed`).
      const jobIds = [...new Set(rows.filter((row) => endsWholeOrder(row) || diesWholeOrder(row)).map((row) => row.syncJobId))];
      if (jobIds.length === 0) return;
      const shipped = await ctx.shipments.jobsShippedIn(trx, jobIds);
      const writing = { repository, divergences: ctx.divergences, outbox: ctx.outbox };
      for (const jobId of jobIds) if (shipped.has(jobId)) await shippedAnywayIn(trx, writing, jobId, SHIPPED_WHILE_CANCELLING);
      const cancelledWhole = rows.filter((row) => endsWholeOrder(row) && row.outcome === 'cancelled' && !shipped.has(row.syncJobId));
      // One statement each for the whole group (these locks are held until it commits).
      await ctx.divergences.resolveOfJobs(trx, [...new Set(cancelledWhole.map((row) => row.syncJobId))], [...MOOT_ONCE_CANCELLED]);
      // The storefront cancelled the job's whole part of the order: the supplier's own cancellation asked the
      // reseller to refund the customer or find another supplier, and that decision is taken.
      await ctx.divergences.resolveOfJobs(trx, [...new Set(cancelledWhole.filter((row) => row.scope === 'order').map((row) => row.syncJobId))], ['supplier_cancelled']);
    },
  };
}

const SHIPPED_WHILE_CANCELLING = shippedAnywayReason('a fulfillment arrived while the cancellation was being made');

/** A whole-order cancellation that died (its last attempt failed or was lost, or the sweep gave it up). */
const diesWholeOrder = (row: Cancellation): boolean => row.scope === 'order' && row.status === 'dead';

/** The to-do list's entries about cancelling part of a supplier order, moot once the order is cancelled whole. */
const MOOT_ONCE_CANCELLED = ['cancellation_dead', 'unsupported'] as const;

/**
 * The order as read, each line named by the id the job kept from the create answer for it (matched by
 * SKU, in order), so a refund names the line the supplier created whatever a later read says.
 */
function withKeptLineIds(state: SupplierOrderState, kept: SupplierLine[]): SupplierOrderState {
  const idsBySku = new Map<string, (string | null)[]>();
  for (const line of kept) idsBySku.set(line.sku, [...(idsBySku.get(line.sku) ?? []), line.lineId]);
  return { ...state, lines: state.lines.map((line) => ({ ...line, lineId: idsBySku.get(line.sku)?.shift() ?? line.lineId })) };
}

/** A supplier's answer that the cancellation cannot be done (422, 409), as opposed to a failure to retry. */
function isRefusal(error: unknown): error is PlatformError {
  return error instanceof PlatformError && !error.retryable && (error.status === 422 || error.status === 409);
}

/**
 * Where the asked lines (storefront SKUs) stand on the supplier order: the quantities still open to
 * cancel, spread over every supplier line of the SKU (one per storefront line: two of the same SKU
 * are two lines), the supplier's SKU (as its pricing made it) first, else the storefront's; what of
 * the rest was shipped; and what the order has no line for. Never more than is open, line by line.
 */
function linesToCancel(state: SupplierOrderState, asked: CancelledLine[], source: SourceStore): { toCancel: LineToCancel[]; shipped: CancelledLine[]; missing: CancelledLine[] } {
  const taken = new Map<SupplierOrderLineState, number>();
  const shipped: CancelledLine[] = [];
  const missing: CancelledLine[] = [];
  for (const ask of asked) {
    // As the request named it, as the supplier's pricing names it now, else as the storefront does.
    const names = [ask.supplierSku, supplierSku(ask.sku, source.pricingConfig), ask.sku];
    const lines = names.map((sku) => state.lines.filter((line) => line.sku === sku)).find((found) => found.length > 0) ?? [];
    if (lines.length === 0) {
      missing.push(ask);
      continue;
    }
    let wanted = ask.quantity;
    for (const line of lines) {
      const open = Math.max(0, openOf(line) - (taken.get(line) ?? 0));
      const quantity = Math.min(wanted, open);
      if (quantity > 0) taken.set(line, (taken.get(line) ?? 0) + quantity);
      wanted -= quantity;
    }
    const fulfilled = lines.reduce((sum, line) => sum + line.fulfilledQuantity, 0);
    if (wanted > 0 && fulfilled > 0) shipped.push({ ...ask, quantity: Math.min(wanted, fulfilled) });
  }
  return { toCancel: callsFor(taken), shipped, missing };
}

/**
 * What to ask the supplier to cancel, these quantities of these lines: a platform that names lines by
 * SKU alone (no line ids) is asked once per SKU, its lines of that SKU summed.
 */
function callsFor(quantities: Iterable<[SupplierOrderLineState, number]>): LineToCancel[] {
  const calls: LineToCancel[] = [];
  for (const [line, quantity] of quantities) {
    const same = line.lineId === null ? calls.find((c) => c.lineId === null && c.sku === line.sku) : undefined;
    if (same) same.quantity += quantity;
    else calls.push({ lineId: line.lineId, sku: line.sku, quantity });
  }
  return calls;
}

/** Whether cancelling `toCancel` leaves nothing of the order open, with nothing of it shipped: the whole order is then cancelled. */
function leavesNothingOpen(state: SupplierOrderState, toCancel: LineToCancel[]): boolean {
  if (state.lines.some((line) => line.fulfilledQuantity > 0)) return false;
  const open = new Map<string, number>();
  for (const line of state.lines) open.set(line.sku, (open.get(line.sku) ?? 0) + line.quantity - line.cancelledQuantity);
  for (const cancel of toCancel) open.set(cancel.sku, (open.get(cancel.sku) ?? 0) - cancel.quantity);
  return [...open.values()].every((quantity) => quantity <= 0);
}

/** What of a supplier line is still open: neither cancelled nor shipped. */
const openOf = (line: SupplierOrderLineState): number => Math.max(0, line.quantity - line.cancelledQuantity - line.fulfilledQuantity);

/** The open quantities of a partly shipped order, line by line. */
function openLines(state: SupplierOrderState): LineToCancel[] {
  return callsFor(state.lines.map((line): [SupplierOrderLineState, number] => [line, openOf(line)]).filter(([, quantity]) => quantity > 0));
}

/**
 * The order with the quantities a refusal said are fulfilled (per supplier SKU, `fulfilledIn`) on its
 * lines of that SKU, in order, each up to what it has not cancelled; `partial` unless nothing is left open.
 */
function withFulfilled(state: SupplierOrderState, fulfilled: { sku: string; quantity: number }[]): SupplierOrderState {
  const left = new Map<string, number>();
  for (const { sku, quantity } of fulfilled) left.set(sku, (left.get(sku) ?? 0) + quantity);
  const lines = state.lines.map((line) => {
    const more = Math.min(openOf(line), left.get(line.sku) ?? 0);
    left.set(line.sku, (left.get(line.sku) ?? 0) - more);
    return { ...line, fulfilledQuantity: line.fulfilledQuantity + more };
  });
  const shippedSome = lines.some((line) => line.fulfilledQuantity > 0);
  const full = shippedSome && lines.every((line) => openOf(line) === 0);
  return { ...state, lines, fulfillment: full ? 'full' : shippedSome ? 'partial' : 'none' };
}

/** The shipped quantities among the lines asked (every shipped line when none match). */
function shippedOf(state: SupplierOrderState, asked: CancelledLine[]): CancelledLine[] {
  const shipped = state.lines.filter((line) => line.fulfilledQuantity > 0).map((line) => ({ sku: line.sku, quantity: line.fulfilledQuantity }));
  const skus = new Set(asked.flatMap((line) => [line.sku, shownSku(line)]));
  const matching = shipped.filter((line) => skus.has(line.sku));
  return matching.length > 0 ? matching : shipped;
}

function contextOf(job: SyncJob) {
  return {
    attempts: job.attempts,
    retriesLeft: job.retriesLeft,
    errorMessage: job.errorMessage ?? null,
    completedAt: job.completedAt ? job.completedAt.toISOString() : null,
    failedAt: job.failedAt ? job.failedAt.toISOString() : null,
    deadAt: job.deadAt ? job.deadAt.toISOString() : null,
    sourceOrderId: job.sourceOrderId ?? null,
  };
}

/**
 * Ends jobs never placed (pending, failed or dead) as completed without a supplier order (the
 * machine's VOID), version-checked like every transition, with the audit entry `sync_job.completed`
 * (`metadata.notPlaced`) and event; their queue messages become stale. Returns which were written.
 */
export async function voidJobsIn(ctx: JobVoiding, trx: Trx, jobs: SyncJob[], now: Date): Promise<boolean[]> {
  const at = now.toISOString();
  const writes = jobs.map((job) => {
    const next = syncJobLifecycle.apply({ status: job.status, context: contextOf(job) }, { type: 'VOID', at });
    if (!next) return null;
    Object.assign(job, {
      status: next.status,
      errorMessage: next.context.errorMessage,
      completedAt: now,
      sourceOrderId: null,
      queueMessageId: null,
      updatedAt: now,
    });
    return { row: job, result: null, audit: jobAuditRecord(job, 'sync_job.completed', SYSTEM_ACTOR, { attempts: job.attempts, sourceOrderId: null, notPlaced: true }) };
  });
  const present = writes.filter((write) => write !== null);
  const written = await ctx.cancelledJobs.writeVoidsIn(trx, present);
  const voided = present.filter((_, i) => written[i]).map((write) => ({ type: 'sync_job.completed' as const, syncJobId: write.row.id }));
  await ctx.outbox.append(trx, await jobEventsIn(trx, voided));
  let index = 0;
  return writes.map((write) => (write === null ? false : written[index++]!));
}

/**
 * The active record through which a cancellation of a deleted record's job is attempted (`load`), by
 * the cancellation's row as loaded: the worker and the sweep hand that same row to
 * `cancellationOutcomeAudit`. Read from the loaded work, no query of its own.
 */
const answeredBy = new WeakMap<Cancellation, string>();

/**
 * `cancellation.completed` (with `metadata.outcome`) or `cancellation.dead`; with
 * `answeredBySourceStoreId` when the job's record was deleted and the active record that replaced it
 * answered (its credentials, its pacing). Absent otherwise.
 */
export const cancellationOutcomeAudit = (cancellation: Cancellation, reason?: DeathReason): AuditRecord =>
  cancellationAuditRecord(cancellation, `cancellation.${cancellation.status}`, SYSTEM_ACTOR, {
    attempts: cancellation.attempts,
    ...(cancellation.status === 'completed'
      ? { outcome: cancellation.outcome, reason: cancellation.reason ?? null }
      : { errorMessage: cancellation.errorMessage }),
    ...(reason && { reason }),
    ...(answeredBy.has(cancellation) && { answeredBySourceStoreId: answeredBy.get(cancellation) }),
  });

/**
 * `cancellation.completed` for every outcome, and `cancellation.too_late` / `cancellation.unsupported`
 * beside it for those (the reseller must act); `cancellation.dead`. A failed attempt that will be
 * retried raises none. `data.object` is the sync job with its cancellations.
 */
export async function cancellationOutcomeEvents(trx: Trx, cancellations: Cancellation[]): Promise<NewEvent[]> {
  const reported = await shipmentsReportedIn(trx, cancellations);
  return jobEventsIn(
    trx,
    cancellations.flatMap((cancellation) =>
      outcomeEventTypes(cancellation)
        .filter((type) => type !== 'cancellation.too_late' || !reported.has(cancellation.id))
        .map((type) => ({ type, syncJobId: cancellation.syncJobId })),
    ),
  );
}

/**
 * Of these whole-order cancellations ended `too_late`, those whose job's shipment was already
 * reported on an earlier cancellation made `too_late` by it (`acceptedThenShipped`: the one before a
 * whole-order cancellation that died, see `shippedAnywayIn`): the same shipment, whose
 * `cancellation.too_late` was sent then, and whose to-do entry is that cancellation's. Such a one is
 * a dead cancellation retried by hand. One read, only when one ended `too_late`.
 */
async function shipmentsReportedIn(trx: Trx, cancellations: Cancellation[]): Promise<Set<string>> {
  const tooLate = cancellations.filter((c) => c.status === 'completed' && c.outcome === 'too_late' && c.scope === 'order');
  if (tooLate.length === 0) return new Set();
  const ofJobs = await cancellationsIn(trx, [...new Set(tooLate.map((c) => c.syncJobId))]);
  return new Set(tooLate.filter((c) => ofJobs.some((other) => other.syncJobId === c.syncJobId && other.id < c.id && acceptedThenShipped(other))).map((c) => c.id));
}

function outcomeEventTypes(cancellation: Cancellation): EventType[] {
  if (cancellation.status === 'dead') return ['cancellation.dead'];
  if (cancellation.status !== 'completed') return [];
  if (cancellation.outcome === 'too_late') return ['cancellation.completed', 'cancellation.too_late'];
  if (cancellation.outcome === 'unsupported') return ['cancellation.completed', 'cancellation.unsupported'];
  return ['cancellation.completed'];
}

export type { SourceStore };
