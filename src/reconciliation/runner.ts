import { connectionOf } from '../attempts/store-connection.ts';
import { holdLease, LeaseLost, RunStopped, type Lease } from '../db/locks.ts';
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import type { Metrics } from '../metrics/index.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { OrderRouting } from '../orders/port.ts';
import { EXTERNAL_ORDER_ID, type ResellerOrder } from '../orders/types.ts';
import { unstorablePathIn } from '../shared/text.ts';
import { PlatformError, type ListedOrder, type PlatformAdapters } from '../platforms/types.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { ListedCancellations, ReconciledStores } from './ports.ts';
import type { HandBack, ReconciliationRepository, Refusal, RunOutcome, TakenRun, Watermark } from './repository.ts';
import { QUEUED_LEASE_MS } from './service.ts';

/** Orders can appear in a platform's list a little after their creation time: each run relists this much. */
export const WATERMARK_OVERLAP_MS = 5 * 60_000;
/** A run's hold on its store; renewed while it runs, so a lost process's run is taken over or failed soon after. */
export const RUN_LEASE_MS = 60_000;
/** How long one page of a listing waits for the store's turn before the run fails (and is retried next interval). */
const MAX_LISTING_TURN_WAIT_MS = 60_000;
/** Pages one run lists at most; a store with more picks up from its new watermark in the next run. */
const MAX_PAGES_PER_RUN = 400;

/**
 * Carries out one reconciliation run: lists the store's orders since its watermark (less the
 * overlap), page by page through the platform adapter (so the store's pacing, timeout and error
 * mapping apply), and routes every order old enough, not cancelled and not routed yet. A platform
 * failure fails the run and keeps the watermark; the next run lists the same orders again.
 */
export class ReconciliationRunner {
  constructor(
    private readonly deps: { config: Pick<Config, 'reconcileGraceMs'>; logger: Logger; metrics: Metrics; platforms: PlatformAdapters; secrets: SecretBox },
    private readonly repository: ReconciliationRepository,
    /** Routing, through its port (src/orders/port.ts), as the order webhook routes. */
    private readonly routing: OrderRouting,
    private readonly stores: ReconciledStores,
    /** The storefront cancellation of an unrouted order the list shows cancelled. */
    private readonly cancelled: ListedCancellations,
  ) {}

  /**
   * Runs the reconciliation a queue message names, unless it finished or another process holds it.
   * Once `stopping` aborts (this process shuts down) the run stops after the page in progress and is
   * handed back with what it did, for the next worker to go on with at once.
   */
  async execute(reconciliationId: string, stopping?: AbortSignal): Promise<void> {
    const run = await this.repository.take(reconciliationId, RUN_LEASE_MS);
    if (!run) return;
    const logger = this.deps.logger.child({ reconciliation_id: run.id, reseller_store_id: run.resellerStoreId });
    const lease = holdLease(() => this.repository.renew(run, RUN_LEASE_MS), RUN_LEASE_MS, (error) => logger.warn({ err: error }, 'could not renew the reconciliation lease'), stopping);
    // A run handed back by a stopping process goes on counting from what that process did.
    const tally: Tally = { ordersSeen: run.ordersSeen, ordersRouted: run.ordersRouted };
    let outcome: RunOutcome | HandBack;
    try {
      outcome = await this.reconcile(run, lease, tally);
    } catch (error) {
      if (error instanceof LeaseLost) {
        logger.warn('reconciliation lost its lease to another process; stopped');
        return;
      }
      if (!(error instanceof PlatformError)) logger.error({ err: error }, 'reconciliation failed');
      outcome = { status: 'failed', ...tally, error: describe(error), watermark: null };
    } finally {
      lease.release();
    }
    if (!('status' in outcome)) {
      if (await this.repository.handBack(run, outcome, QUEUED_LEASE_MS)) {
        logger.info({ orders_seen: outcome.ordersSeen, orders_routed: outcome.ordersRouted, resume_since: outcome.resumeSince }, 'reconciliation handed back: this process is stopping');
      }
      return;
    }
    if (!(await this.repository.finish(run, outcome))) return;
    this.deps.metrics.reconciliationRuns.inc({ outcome: outcome.status });
    logger.info({ status: outcome.status, orders_seen: outcome.ordersSeen, orders_routed: outcome.ordersRouted, error: outcome.error ?? undefined }, 'reconciliation finished');
  }

  private async reconcile(run: TakenRun, lease: Lease, tally: Tally): Promise<RunOutcome | HandBack> {
    const deleted: RunOutcome = { status: 'failed', ...tally, error: 'The reseller store was deleted.', watermark: null };
    const store = await this.stores.findActive(run.resellerStoreId);
    if (!store) return deleted;
    const current = (await this.repository.watermarkOf(store.id)) ?? { watermark: store.createdAt, reconciledUntil: store.createdAt };
    // A new store does not import its history: the automatic window never reaches before its creation
    // (less a second: platform_b's creation times have whole seconds and its filter is exclusive).
    // A handed-back run goes on where the stopped process's listing got to (`since` stays where it began).
    const since = run.resumeSince ?? run.requestedSince ?? new Date(Math.max(wholeSecond(store.createdAt) - 1000, current.watermark.getTime() - WATERMARK_OVERLAP_MS));
    const cutoff = new Date(Date.now() - this.deps.config.reconcileGraceMs);
    await this.repository.progress(run, run.resumeSince ? (run.since ?? since) : since, tally.ordersSeen, tally.ordersRouted);

    // Paced like every call to the store (its shared turns), so a run never starves order placement;
    // it waits its turn behind a backlog (its lease is renewed meanwhile) rather than fail.
    // A stop (SIGTERM) ends a wait for the store's turn at once: the run is handed back, not held up to a minute.
    const connection = { ...connectionOf(this.deps, store), maxTurnWaitMs: MAX_LISTING_TURN_WAIT_MS, stopping: lease.stopping };
    let newest = current.watermark;
    let truncated = false;
    let pages = 0;
    // Where this listing got to: the newest order of the pages routed whole (lists are oldest first).
    let listedUntil: Date | null = null;
    try {
      for await (const page of this.deps.platforms[store.platform].listOrders(connection, since)) {
        lease.check();
        if (!(await this.stores.findActive(store.id))) return { ...deleted, ...tally };
        // Lists are oldest first: the first order inside the grace period ends the listing.
        const due = page.filter((listed) => listed.createdAt <= cutoff);
        await this.routePage(store, due, run, lease, tally);
        for (const listed of due) {
          if (listed.createdAt > newest) newest = listed.createdAt;
          if (listedUntil === null || listed.createdAt > listedUntil) listedUntil = listed.createdAt;
        }
        await this.repository.progress(run, run.resumeSince ? (run.since ?? since) : since, tally.ordersSeen, tally.ordersRouted);
        if (due.length < page.length) break;
        if (++pages >= MAX_PAGES_PER_RUN) {
          truncated = true;
          break;
        }
      }
    } catch (error) {
      // A listing call the stop cut short while it waited for its turn was never sent: a stop like any other.
      const stopped = error instanceof RunStopped || (error instanceof PlatformError && !error.sent && lease.stopping.aborted);
      if (!stopped) throw error;
      // Stopped between pages (or before routing one): what was routed is kept, and the store is
      // reconciled up to the newest order this listing saw, as a truncated run's is. The next hold
      // lists from the second before it (platform_b's whole seconds, its exclusive filter).
      const resumeSince = listedUntil === null ? since : new Date(Math.max(since.getTime(), wholeSecond(listedUntil) - 1000));
      return { ...tally, resumeSince, watermark: listedUntil === null ? null : this.nextWatermark(current, since, newest, newest) };
    }
    // Listed to its end: finished even if this process is stopping meanwhile.
    lease.checkHeld();
    // A truncated listing reconciled the store only up to the newest order it saw.
    const watermark = this.nextWatermark(current, since, newest, truncated ? newest : cutoff);
    return { status: 'succeeded', ...tally, error: null, watermark };
  }

  /**
   * The watermark moves only over orders this run saw, and only when the run listed from at or
   * before it: a manual run from a later `since` skipped the orders in between.
   */
  private nextWatermark(current: Watermark, since: Date, newest: Date, listedUntil: Date): Watermark | null {
    if (since > current.watermark) return null;
    return { watermark: newest, reconciledUntil: listedUntil };
  }

  private async routePage(store: ResellerStore, due: ListedOrder[], run: TakenRun, lease: Lease, tally: Tally): Promise<void> {
    const refusals: Refusal[] = [];
    const cancelled: ListedOrder[] = [];
    const routable = due.filter((listed) => {
      const refusal = this.refusalOf(listed, run);
      if (refusal) {
        if (!listed.cancelled) refusals.push(refusal);
        return false;
      }
      if (listed.cancelled) cancelled.push(listed);
      return !listed.cancelled;
    });
    // An order its webhook would have refused is audited as that webhook would have been (once per order).
    await this.repository.recordRefusals(store, run, refusals);
    const routed = await this.routing.routedAmong(store.id, [...routable, ...cancelled].map((listed) => listed.externalOrderId));
    const unrouted = routable.filter((listed) => !routed.has(listed.externalOrderId));
    // A run stopped here is handed back without this page, which the next hold lists again.
    lease.check();
    tally.ordersSeen += due.length;
    // A cancelled order is never routed here; one nobody routed yet is recorded as cancelled, as its
    // (lost) orders/cancelled webhook would be, so an orders/create delivered late (a platform's retry)
    // routes it as cancelled and nothing reaches a supplier. A routed one is the divergence watch's.
    for (const listed of cancelled) {
      if (!routed.has(listed.externalOrderId)) await this.cancelled(store, listed.externalOrderId, run.id);
    }
    // Routed together, the orders share the webhook path's group commit. Every order is routed before
    // a failure fails the run (the watermark stays before the failed one, which the next run retries).
    const results = await Promise.allSettled(unrouted.map((listed) => this.routing.route(store, listed.order as ResellerOrder, { source: 'reconciliation', reconciliationId: run.id })));
    const first = results.filter((result) => result.status === 'fulfilled' && result.value.firstRouting).length;
    tally.ordersRouted += first;
    this.deps.metrics.reconciliationOrdersRouted.inc(first);
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Why the order's webhook would have been refused (400, `order.refused`), or null: it can be routed. */
  private refusalOf(listed: ListedOrder, run: TakenRun): Refusal | null {
    const problem: Omit<Refusal, 'externalOrderId'> | null =
      'invalid' in listed.order
        ? { reason: listed.order.invalid, param: listed.order.param }
        : !EXTERNAL_ORDER_ID.test(listed.externalOrderId)
          ? { reason: 'The order id is not a valid order id.', param: 'id' }
          : unstorableProblem(listed.order);
    if (problem === null) return null;
    this.deps.logger.warn(
      { reconciliation_id: run.id, reseller_store_id: run.resellerStoreId, external_order_id: listed.externalOrderId.slice(0, 64), problem: problem.reason },
      'listed order skipped: its webhook would have been refused',
    );
    return { externalOrderId: listed.externalOrderId, ...problem };
  }
}

/** What a run has done so far, reported even when it fails. */
interface Tally {
  ordersSeen: number;
  ordersRouted: number;
}

const wholeSecond = (date: Date) => Math.floor(date.getTime() / 1000) * 1000;

function describe(error: unknown): string {
  if (error instanceof PlatformError) return error.message;
  return 'Internal error while reconciling; see the service logs.';
}

/** Why an order cannot be stored (the webhook path refuses the same text with 400), or null. */
function unstorableProblem(order: unknown): Omit<Refusal, 'externalOrderId'> | null {
  const path = unstorablePathIn(order);
  return path === null ? null : { reason: `${path || 'the order'} has a NUL character or an unpaired surrogate, which cannot be stored`, param: path || 'body' };
}
