import { setTimeout as delay } from 'node:timers/promises';
import { insertAudit, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import { connectionOf } from '../attempts/store-connection.ts';
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import type { Outbox } from '../events/outbox.ts';
import type { Metrics } from '../metrics/index.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { unstorablePathIn, wellFormed } from '../shared/text.ts';
import { fulfillmentKeys } from '../fulfillments/identity.ts';
import type { FulfillmentService } from '../fulfillments/service.ts';
import type { OrderRouting } from '../orders/port.ts';
import { PlatformError, type PlatformAdapters, type StoreConnection } from '../platforms/types.ts';
import type { UpdatedOrder } from '../platforms/updated.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import { holdLease, LeaseLost, RunStopped, type Lease } from '../db/locks.ts';
import { QUEUED_LEASE_MS } from './service.ts';
import { jobEventsIn } from '../cancellations/events.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import type { WatchReads } from './ports.ts';
import type { WatchRepairs } from './repairs.ts';
import type { PassOutcome, TakenPass, WatchRepository } from './repository.ts';

/** Orders can show in an updated-since list a little after their update time: each pass relists this much. */
export const WATCH_OVERLAP_MS = 5 * 60_000;
/** A pass's hold on its store; renewed while it runs, so a lost process's pass is taken over or failed soon after. */
export const PASS_LEASE_MS = 60_000;
/** How long one call waits for its store's turn (behind a backlog) before it is paused and tried again. */
const MAX_TURN_WAIT_MS = 60_000;
/**
 * Pages with a change past the store's watermark listed per store and pass at most; a store with more
 * continues from its new watermark next pass. Pages of the overlap alone (changes at or before the
 * watermark, listed again) do not count: a burst of more than this many pages within the overlap would
 * otherwise keep every pass from getting past the watermark.
 */
const MAX_PAGES_PER_STORE = 200;
/** Pages listed per store and pass at most, those of the overlap included (a bound against a list that never ends). */
const MAX_LISTED_PAGES_PER_STORE = 10 * MAX_PAGES_PER_STORE;
/** 429s (or turns too far away) one call waits out before the store's listing fails for this pass. */
const MAX_PAUSES_PER_CALL = 10;
const MAX_PAUSE_MS = 60_000;
/** Orders of one page compared at once (each its own transactions, and for platform_b its own read). */
const ORDERS_AT_ONCE = 8;
/** Jobs raised stale per pass at most. */
const STALE_BATCH = 500;

/** What `watchStore` returns for a store whose listing stopped because this process is stopping. */
const STOPPED = Symbol('stopped');

export type RepairType = 'tracking' | 'supplier_cancelled' | 'storefront_cancelled' | 'stale';

interface Tally {
  ordersSeen: number;
  repairs: number;
  platformReads: number;
}

/**
 * One divergence-watch pass over a reseller store and its suppliers (order-changes.md): each store's
 * orders updated since its watermark (less the overlap) are listed through its adapter (its shared
 * pacing, timeout and error mapping), and every listed order the service knows is compared with
 * what it believes. Stores are listed side by side; a store whose listing fails keeps its watermark
 * (the next pass lists the same orders again) and fails the pass, the others go on. A 429 pauses
 * the listing for its Retry-After and the same page is asked again: nothing is skipped.
 */
export class WatchRunner {
  constructor(
    private readonly deps: {
      config: Pick<Config, 'staleAfterMs'>;
      logger: Logger;
      metrics: Metrics;
      outbox: Outbox;
      platforms: PlatformAdapters;
      secrets: SecretBox;
    },
    private readonly repository: WatchRepository,
    private readonly fulfillments: FulfillmentService,
    /** Routing, through its port (src/orders/port.ts): which listed storefront orders were routed. */
    private readonly routing: Pick<OrderRouting, 'routedAmong'>,
    private readonly repairs: WatchRepairs,
    /** The stores, jobs and fulfillments a pass compares, read through their features' repositories. */
    private readonly reads: WatchReads,
  ) {}

  /**
   * Runs the pass a queue message names, unless it finished or another process holds it. Once
   * `stopping` aborts (this process shuts down) each store's listing stops after the page in progress,
   * its watermark moved over the pages compared, and the pass is handed back for the next worker.
   */
  async execute(watchPassId: string, stopping?: AbortSignal): Promise<void> {
    const pass = await this.repository.take(watchPassId, PASS_LEASE_MS);
    if (!pass) return;
    const logger = this.deps.logger.child({ watch_pass_id: pass.id, reseller_store_id: pass.resellerStoreId });
    const lease = holdLease(() => this.repository.renew(pass, PASS_LEASE_MS), PASS_LEASE_MS, (error) => logger.warn({ err: error }, 'could not renew the divergence-watch lease'), stopping);
    // A pass handed back by a stopping process goes on counting from what that process did.
    const tally: Tally = { ordersSeen: pass.ordersSeen, repairs: pass.repairs, platformReads: pass.platformReads };
    let outcome: PassOutcome | 'stopped';
    try {
      outcome = await this.watch(pass, lease, tally);
    } catch (error) {
      if (error instanceof LeaseLost) {
        logger.warn('divergence-watch pass lost its lease to another process; stopped');
        return;
      }
      logger.error({ err: error }, 'divergence-watch pass failed');
      outcome = { status: 'failed', ...tally, error: 'Internal error while watching; see the service logs.' };
    } finally {
      lease.release();
    }
    if (outcome === 'stopped') {
      if (await this.repository.handBack(pass, tally, QUEUED_LEASE_MS)) {
        logger.info({ orders_seen: tally.ordersSeen, repairs: tally.repairs }, 'divergence-watch pass handed back: this process is stopping');
      }
      return;
    }
    if (!(await this.repository.finish(pass, outcome))) return;
    this.deps.metrics.watchPasses.inc({ outcome: outcome.status });
    logger.info({ status: outcome.status, orders_seen: outcome.ordersSeen, repairs: outcome.repairs, platform_reads: outcome.platformReads, error: outcome.error ?? undefined }, 'divergence-watch pass finished');
  }

  private async watch(pass: TakenPass, lease: Lease, tally: Tally): Promise<PassOutcome | 'stopped'> {
    const reseller = await this.reads.resellerStores.findActive(pass.resellerStoreId);
    if (!reseller) return { status: 'failed', ...tally, error: 'The reseller store was deleted.' };
    const suppliers = await this.reads.suppliers.activeInOrderOf(reseller.id);
    const errors = await Promise.all([
      this.watchStore(reseller, lease, tally, (orders) => this.compareStorefront(reseller, orders, pass)),
      ...suppliers.map((supplier) => {
        // The supplier's deleted records it replaced, read once a pass when an order it lists is not its own.
        let formers: Promise<string[]> | undefined;
        const formersOf = () => (formers ??= this.reads.suppliers.formerRecordsOf([supplier.id]));
        return this.watchStore(supplier, lease, tally, (orders, connection) => this.compareSupplier(supplier, orders, connection, pass, lease, tally, formersOf));
      }),
    ]);
    lease.checkHeld();
    if (errors.includes(STOPPED)) return 'stopped';
    const stale = await this.raiseStale(reseller);
    tally.repairs += stale;
    const failed = errors.filter((error): error is string => error !== null && error !== STOPPED);
    return failed.length === 0 ? { status: 'succeeded', ...tally, error: null } : { status: 'failed', ...tally, error: failed.join(' | ').slice(0, 2000) };
  }

  /**
   * Lists one store's updated orders page by page and hands each page to `compare`; on success moves
   * the store's watermark to the newest update it saw. Returns the failure, or null; STOPPED when
   * this process is stopping (the watermark then moved over the pages compared whole, as when the
   * page budget ends a listing).
   */
  private async watchStore(
    store: ResellerStore | SourceStore,
    lease: Lease,
    tally: Tally,
    compare: (orders: UpdatedOrder[], connection: StoreConnection) => Promise<number>,
  ): Promise<string | null | typeof STOPPED> {
    const stored = await this.repository.watermarkOf(store.id);
    const current = stored ?? store.createdAt;
    // A new store's history is not read (less a second: platform_b's times have whole seconds).
    const since = new Date(Math.max(Math.floor(store.createdAt.getTime() / 1000) * 1000 - 1000, current.getTime() - WATCH_OVERLAP_MS));
    // A stop (SIGTERM) ends a wait for the store's turn at once (the call unsent): the pass is handed back.
    const connection = { ...connectionOf(this.deps, store), maxTurnWaitMs: MAX_TURN_WAIT_MS, stopping: lease.stopping };
    const adapter = this.deps.platforms[store.platform];
    // Not the store's creation time: a platform_b order changed in the second the store was added
    // has an earlier (whole-second) time, and the store would get no watermark.
    let newest: Date | null = null;
    let cursor: string | null = null;
    let stopped = false;
    try {
      for (let pages = 0, newPages = 0; newPages < MAX_PAGES_PER_STORE && pages < MAX_LISTED_PAGES_PER_STORE; pages++) {
        const page = await this.paced(() => adapter.listUpdatedOrders(connection, since, cursor), lease, tally);
        if (page.orders.some((order) => order.updatedAt > current)) newPages++;
        tally.ordersSeen += page.orders.length;
        // Stores are watched side by side: add after the await, or another store's additions are lost.
        const repaired = await compare(page.orders, connection);
        tally.repairs += repaired;
        for (const order of page.orders) if (newest === null || order.updatedAt > newest) newest = order.updatedAt;
        cursor = page.next;
        if (cursor === null) break;
      }
    } catch (error) {
      if (error instanceof LeaseLost) throw error;
      if (error instanceof RunStopped) stopped = true;
      else {
        if (!(error instanceof PlatformError)) this.deps.logger.error({ err: error, store_id: store.id }, 'divergence watch of a store failed');
        return `${store.id}: ${error instanceof PlatformError ? error.message : 'internal error; see the service logs'}`;
      }
    }
    lease.checkHeld();
    if (newest !== null && (stored === null || newest > stored)) await this.repository.advanceWatermark(store.id, newest);
    return stopped ? STOPPED : null;
  }

  /** A call through the store's pacing; a 429 (or a turn too far away) pauses it for the store's Retry-After, then it is made again. */
  private async paced<T>(call: () => Promise<T>, lease: Lease, tally: Tally): Promise<T> {
    for (let pauses = 0; ; pauses++) {
      lease.check();
      try {
        tally.platformReads += 1;
        return await call();
      } catch (error) {
        // Cut short by the stop (unsent) or not: a stopping process hands the pass back, it does not fail the store.
        if (lease.stopping.aborted && !(error instanceof LeaseLost)) lease.check();
        const pausable = error instanceof PlatformError && error.retryable && (error.status === 429 || !error.sent);
        if (!pausable || pauses >= MAX_PAUSES_PER_CALL) throw error;
        if (error.sent) this.deps.metrics.watchPauses.inc();
        // A stop ends the pause early (the next turn's check hands the pass back).
        await delay(Math.min(Math.max(error.retryAfterMs ?? 1000, 100), MAX_PAUSE_MS), undefined, { signal: lease.stopping }).catch(() => {});
      }
    }
  }

  /**
   * Storefront orders: a known one (routed, or with jobs a reseller made by hand, which record no
   * routing) listed cancelled is treated as its cancellation webhook. A known one listed showing some
   * of its lines cancelled (the order itself not) is compared with the cancellations the service
   * recorded for it: what it shows beyond them (a partial cancellation whose webhook was lost) is
   * cancelled as that webhook would have (a manual job placed, which stores the order it read, as any
   * job; one whose read showed those quantities cancelled already placed none of them, and one not
   * placed yet places the open quantities as it reads them). The list entry carries the lines: no read
   * more. Unknown ones are reconciliation's.
   */
  private async compareStorefront(store: ResellerStore, orders: UpdatedOrder[], pass: TakenPass): Promise<number> {
    const cancelled = orders.filter((order) => order.cancelled && storableId(order));
    const partly = orders.filter((order) => !order.cancelled && order.cancelledLines && order.cancelledLines.lines.length > 0 && storableId(order));
    const ids = cancelled.map((order) => order.externalOrderId);
    const routed = await this.routing.routedAmong(store.id, [...ids, ...partly.map((order) => order.externalOrderId)]);
    const withJobs = await this.reads.jobs.ordersWithJobs(store.id, [...ids, ...partly.map((order) => order.externalOrderId)].filter((id) => !routed.has(id)));
    let repairs = 0;
    for (const order of cancelled) {
      if (!routed.has(order.externalOrderId) && !withJobs.has(order.externalOrderId)) continue;
      if (await this.repairs.storefrontCancelled(store, order.externalOrderId, pass.id)) repairs += this.repaired('storefront_cancelled');
    }
    for (const order of partly) {
      if (!routed.has(order.externalOrderId) && !withJobs.has(order.externalOrderId)) continue;
      const shown = { externalOrderId: order.externalOrderId, cancelled: order.cancelledLines! };
      if (await this.repairs.storefrontLinesCancelled(store, shown, pass.id)) repairs += this.repaired('storefront_cancelled');
    }
    return repairs;
  }

  /**
   * Supplier orders the service placed: tracking no webhook brought is recorded and pushed once
   * (the webhook's own de-duplication, so a late webhook pushes nothing more), and a cancellation
   * is recorded as the supplier's own. The supplier's own sales (orders of no job) are ignored.
   */
  private async compareSupplier(supplier: SourceStore, orders: UpdatedOrder[], connection: StoreConnection, pass: TakenPass, lease: Lease, tally: Tally, formersOf: () => Promise<string[]>): Promise<number> {
    const storable = orders.filter(storableId);
    const jobs = await this.jobsOfListed(supplier, storable.map((order) => order.externalOrderId), formersOf);
    const known = storable.filter((order) => jobs.has(order.externalOrderId));
    // An order no job recorded may still be one of the service's: its reference names a job whose
    // answer was lost (platforms.md). What it shows is kept for that job: a later pass may never list
    // the order again once the job is retried and learns it.
    const referenced = storable.filter((order) => !jobs.has(order.externalOrderId) && order.syncReference !== null && unstorablePathIn(order.syncReference) === null);
    // The job a reference names may be one of a deleted record this one replaced (src/source-stores/former-records.ts).
    const inDoubt = await this.jobsNamed(supplier, [...new Set(referenced.map((order) => order.syncReference!))], formersOf, (store, ids) => this.reads.jobs.inDoubtAmong(store, ids));
    const inDoubtCounts = await mapLimit(
      referenced.filter((order) => inDoubt.has(order.syncReference!)),
      ORDERS_AT_ONCE,
      (order) => this.compareInDoubt(supplier, inDoubt.get(order.syncReference!)!, order, connection, pass, lease, tally),
    );
    // A job ended unplaced whose order is listed after all (its cancellation's lookup missed it): its shipments are its own.
    const unplaced = await this.jobsNamed(
      supplier,
      [...new Set(referenced.filter((order) => !inDoubt.has(order.syncReference!)).map((order) => order.syncReference!))],
      formersOf,
      (store, ids) => this.reads.jobs.unplacedAmong(store, ids),
    );
    const unplacedCounts = await mapLimit(
      referenced.filter((order) => unplaced.has(order.syncReference!)),
      ORDERS_AT_ONCE,
      (order) => this.compareUnplaced(supplier, unplaced.get(order.syncReference!)!, order, connection, pass, lease, tally),
    );
    const recorded = await this.reads.fulfillments.keysOf([...jobs.values()].map((job) => job.id));
    // The orders of a page are compared a few at a time: each is its own job, its own transactions.
    const counts = await mapLimit(known, ORDERS_AT_ONCE, async (order) => {
      let repairs = 0;
      const job = jobs.get(order.externalOrderId)!;
      const reason = order.cancelReason === null ? null : wellFormed(order.cancelReason);
      if (order.cancelled && (await this.repairs.supplierCancelled(job, { sourceOrderId: order.externalOrderId, reason, listedAt: order.updatedAt, watchPassId: pass.id }))) {
        repairs += this.repaired('supplier_cancelled');
      }
      const shown = order.cancelled ? [] : cancelledBySku(order);
      if (shown.length > 0 && (await this.repairs.supplierLinesCancelled(job, { sourceOrderId: order.externalOrderId, shown, listedAt: order.updatedAt, watchPassId: pass.id }))) {
        repairs += this.repaired('supplier_cancelled');
      }
      const shipments = order.shipments ?? (await this.paced(() => this.deps.platforms[supplier.platform].listShipments(connection, order.externalOrderId), lease, tally));
      for (const shipment of shipments) {
        // Its webhook would have been refused (400): a pass that stored it would fail at every attempt.
        if (unstorablePathIn(shipment.tracking) !== null) {
          this.deps.logger.warn({ watch_pass_id: pass.id, sync_job_id: job.id }, 'shipment skipped: its tracking has text that cannot be stored');
          continue;
        }
        const keys = fulfillmentKeys(shipment, undefined);
        // Recorded already, unless a fulfillment the platform names by id shows numbers added to it since.
        const numbersRecorded = !keys.platformFulfillment || shipment.tracking.numbers.every((number) => recorded.has(`${job.id}#number:${number}`));
        if (recorded.has(`${job.id}:${keys.dedupeKey}`) && numbersRecorded) continue;
        const { created } = await this.fulfillments.receiveReconciled(job, shipment.tracking, keys, pass.id);
        if (created) repairs += this.repaired('tracking');
      }
      return repairs;
    });
    return [...inDoubtCounts, ...unplacedCounts, ...counts].reduce((sum, count) => sum + count, 0);
  }

  /**
   * The jobs that placed these listed orders of a supplier's store, by supplier order id: the
   * supplier record's own, and for an order none of them placed, a job of a deleted record of the same
   * supplier that this one replaced (src/source-stores/former-records.ts): its shipments and
   * cancellations are repaired as the webhook now addressed to this record would.
   */
  private jobsOfListed(supplier: SourceStore, sourceOrderIds: string[], formersOf: () => Promise<string[]>): Promise<Map<string, SyncJob>> {
    return this.ownOrFormers(supplier, sourceOrderIds, formersOf, (store, ids) => this.reads.jobs.bySourceOrders(store, ids));
  }

  /**
   * Of the jobs these listed orders' references name (job ids), those `among` picks (in doubt, ended
   * unplaced), by id: as `jobsOfListed`, the supplier record's own first, then its former records'
   * (a job whose create answer was lost before its record was deleted and created again is named by
   * the order the new record's store lists). Never another tenant's: formers share the reseller
   * store, owner, platform and domain, and `among` reads one store's jobs.
   */
  private jobsNamed(
    supplier: SourceStore,
    syncJobIds: string[],
    formersOf: () => Promise<string[]>,
    among: (sourceStoreId: string, syncJobIds: string[]) => Promise<Map<string, SyncJob>>,
  ): Promise<Map<string, SyncJob>> {
    return this.ownOrFormers(supplier, syncJobIds, formersOf, among);
  }

  /** `read` of the supplier record's jobs by these keys, then of its former records' for the keys left (formers read once a pass, only when needed). */
  private async ownOrFormers(
    supplier: SourceStore,
    keys: string[],
    formersOf: () => Promise<string[]>,
    read: (sourceStoreId: string, keys: string[]) => Promise<Map<string, SyncJob>>,
  ): Promise<Map<string, SyncJob>> {
    if (keys.length === 0) return new Map();
    const jobs = await read(supplier.id, keys);
    if (jobs.size === keys.length) return jobs;
    for (const former of await formersOf()) {
      const left = keys.filter((key) => !jobs.has(key));
      if (left.length === 0) break;
      for (const [key, job] of await read(former, left)) jobs.set(key, job);
    }
    return jobs;
  }

  /**
   * A supplier order whose job never learnt its id (its reference names the job): a cancellation is
   * recorded on the job as the supplier's own; its shipments are held (`holdFor`), as their webhook's
   * are, until the job completes with that order id (the sweep's claims then record and push them
   * once) or can no longer own it. A job ended unplaced by its whole-order cancellation (`completed`,
   * no order: nothing will ever complete it) gets the order's id recorded now, as that cancellation's
   * own lookup records it: the lookup reads a bounded number of pages and, on a busy supplier, fails
   * at every retry (the cancellation dies) while the watch lists the order. A dead cancellation is
   * re-opened then (`voidedOrderFound`: fresh automatic retries, audit and event
   * `cancellation.retried`); its retry cancels the order, and the held shipments are claimed by the job. A job still to be retried learns
   * its order from that retry (the placement's Idempotency-Key), never from the watch. Returns the repairs.
   */
  private async compareInDoubt(supplier: SourceStore, job: SyncJob, order: UpdatedOrder, connection: StoreConnection, pass: TakenPass, lease: Lease, tally: Tally): Promise<number> {
    let repairs = 0;
    if (job.status === 'completed' && job.sourceOrderId == null) {
      const found = await this.repairs.voidedOrderFound(job, { sourceOrderId: order.externalOrderId, watchPassId: pass.id });
      if (found.recorded) {
        this.deps.logger.info(
          { watch_pass_id: pass.id, sync_job_id: job.id, source_order_id: order.externalOrderId, reopened: found.reopened },
          found.reopened
            ? 'order in doubt of a job ended unplaced found by its reference; recorded on the job, its dead cancellation re-opened'
            : 'order in doubt of a job ended unplaced found by its reference; recorded on the job',
        );
      }
      if (found.reopened) repairs += this.repaired('storefront_cancelled');
    }
    const reason = order.cancelReason === null ? null : wellFormed(order.cancelReason);
    if (order.cancelled && (await this.repairs.supplierCancelled(job, { sourceOrderId: order.externalOrderId, reason, listedAt: order.updatedAt, watchPassId: pass.id }))) {
      repairs += this.repaired('supplier_cancelled');
    }
    const shipments = order.shipments ?? (await this.paced(() => this.deps.platforms[supplier.platform].listShipments(connection, order.externalOrderId), lease, tally));
    for (const shipment of shipments) {
      if (unstorablePathIn(shipment.tracking) !== null) continue;
      // Held for the job's own record (a deleted one this record replaced, maybe): its claims match the job's store.
      await this.fulfillments.holdFor({ id: job.sourceStoreId, ownerId: job.ownerId, resellerStoreId: job.resellerStoreId }, shipment, fulfillmentKeys(shipment, undefined), pass.id);
      this.deps.logger.info({ watch_pass_id: pass.id, sync_job_id: job.id, source_order_id: order.externalOrderId }, 'shipment of an order in doubt held for its job');
    }
    return repairs;
  }

  /**
   * A supplier order whose reference names a job ended unplaced (its whole storefront order was
   * cancelled while the placement was in doubt, and the cancellation's lookup by reference missed
   * this order): shipped, the order is recorded on the job (audit `sync_job.order_found`) and its
   * shipments are recorded and pushed as any other the watch finds (`fulfillment.reconciled`); the
   * recording turns the job's `not_placed` cancellation `too_late`, on the reseller's to-do list
   * (src/cancellations/too-late.ts). Still open (nothing shipped, not cancelled at the supplier):
   * nothing cancelled it, and the supplier would ship what the customer cancelled; the order is
   * recorded on the job and a new whole-order cancellation of the job asked for (`unplacedOrderOpen`,
   * src/cancellations/service.ts `cancelFoundOrder`), retried work as any other, which cancels it.
   * Cancelled at the supplier: nothing to do. Returns the repairs.
   */
  private async compareUnplaced(supplier: SourceStore, job: SyncJob, order: UpdatedOrder, connection: StoreConnection, pass: TakenPass, lease: Lease, tally: Tally): Promise<number> {
    const listed = order.shipments ?? (await this.paced(() => this.deps.platforms[supplier.platform].listShipments(connection, order.externalOrderId), lease, tally));
    if (listed.length === 0 && !order.cancelled) {
      if (!(await this.repairs.unplacedOrderOpen(job, { sourceOrderId: order.externalOrderId, watchPassId: pass.id }))) return 0;
      this.deps.logger.info({ watch_pass_id: pass.id, sync_job_id: job.id, source_order_id: order.externalOrderId }, 'supplier order of a job ended not_placed found open: recorded on the job, its cancellation asked for again');
      return this.repaired('storefront_cancelled');
    }
    const shipments = listed.filter((shipment) => unstorablePathIn(shipment.tracking) === null);
    if (shipments.length === 0) return 0;
    // Recorded by this pass, or a moment ago by the order's fulfillment webhook: either way the job owns the order now.
    await this.reads.jobs.recordFoundOrder(job.id, order.externalOrderId, { by: 'divergence_watch', watchPassId: pass.id });
    const owner = (await this.reads.jobs.bySourceOrders(job.sourceStoreId, [order.externalOrderId])).get(order.externalOrderId);
    if (!owner || owner.id !== job.id) return 0;
    this.deps.logger.info({ watch_pass_id: pass.id, sync_job_id: job.id, source_order_id: order.externalOrderId }, 'supplier order of a job ended unplaced found shipped: recorded on the job');
    let repairs = 0;
    for (const shipment of shipments) {
      const { created } = await this.fulfillments.receiveReconciled(owner, shipment.tracking, fulfillmentKeys(shipment, undefined), pass.id);
      if (created) repairs += this.repaired('tracking');
    }
    return repairs;
  }

  /** Placed jobs with no tracking for STALE_AFTER_MS: `sync_job.stale` once each, and the to-do list. A database query, no platform call. */
  private async raiseStale(reseller: ResellerStore): Promise<number> {
    const raised = await this.repository.raiseStale(reseller.id, this.deps.config.staleAfterMs, STALE_BATCH, async (trx, jobs) => {
      await insertAudit(
        trx,
        jobs.map((job) => ({
          ownerId: job.ownerId,
          resellerStoreId: job.resellerStoreId,
          action: 'sync_job.stale',
          resourceType: 'sync_job',
          resourceId: job.id,
          actorId: SYSTEM_ACTOR,
          metadata: { sourceOrderId: job.sourceOrderId ?? null, staleAfterMs: this.deps.config.staleAfterMs },
        })),
      );
      // The job as its GET shows it: with its cancellations and its fulfillments (a stale job may have shipments recorded `skipped`).
      await this.deps.outbox.append(trx, await jobEventsIn(trx, jobs.map((job) => ({ type: 'sync_job.stale' as const, syncJobId: job.id }))));
    });
    for (let i = 0; i < raised; i++) this.repaired('stale');
    return raised;
  }

  private repaired(type: RepairType): number {
    this.deps.metrics.watchRepairs.inc({ type });
    return 1;
  }
}

/**
 * `work` over `items`, at most `limit` at once; results in the items' order. After a failure no
 * item is started, and the first failure is thrown once the items in progress have finished (so
 * nothing of the page is still being written when the store's listing is reported failed).
 */
async function mapLimit<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async () => {
    while (next < items.length && failure === null) {
      const index = next++;
      try {
        results[index] = await work(items[index]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}

/** An id no job or order can have (a NUL, an unpaired surrogate): a query naming it would fail the pass at every attempt. */
const storableId = (order: UpdatedOrder) => unstorablePathIn(order.externalOrderId) === null;

/** What a listed order shows cancelled of its lines, per SKU (its lines of one SKU summed), storable SKUs only. */
function cancelledBySku(order: UpdatedOrder): { sku: string; quantity: number }[] {
  const sums = new Map<string, number>();
  for (const line of order.cancelledLines?.lines ?? []) {
    if (line.sku === '' || unstorablePathIn(line.sku) !== null) continue;
    sums.set(line.sku, (sums.get(line.sku) ?? 0) + line.quantity);
  }
  return [...sums].map(([sku, quantity]) => ({ sku, quantity }));
}
