import { insertAudit, insertAuditOnce, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import { GroupCommit } from '../db/group-commit.ts';
import type { Trx } from '../db/sql.ts';
import type { Outbox } from '../events/outbox.ts';
import type { NewEvent } from '../events/types.ts';
import type { Metrics } from '../metrics/index.ts';
import { normaliseVendor } from '../pricing/index.ts';
import type { JobCreator, JobsRequest, SyncJobService } from '../sync-jobs/service.ts';
import type { RoutingSource } from './entity.ts';
import { orderReconciledEvent, orderUnmatchedEvent, type UnmatchedOrder } from './events.ts';
import type { CancellationVia, OrderCancelled, OrderCancelling, OrderCancellations, OrderRouting, OrderStore, RoutedOrder, RoutingVia, StorefrontCancellation } from './port.ts';
import type { RoutedOrderRepository } from './repository.ts';
import type { CancelledBefore, OrderLine, ResellerOrder } from './types.ts';

/** A supplier an order can be routed to, by its vendor tag. */
export interface RoutableSource {
  id: string;
  vendorTag: string;
}

/** One order to route, matched: its jobs' source stores, and what its routing records. */
interface RoutingRequest extends JobsRequest {
  source: RoutingSource;
  /**
   * The lines no supplier matched, or more than one did: audited and announced once per order,
   * however often it is routed.
   */
  unmatched: (UnmatchedOrder & { ambiguous: AmbiguousVendor[] }) | null;
  /** Recorded only by the routing that routes the order first (`order.reconciled`). */
  reconciliationId: string | null;
  /** What the storefront order shows cancelled of its lines already: recorded and applied by the first routing only. */
  cancelledBefore: CancelledBefore | null;
}

type OrderKey = Pick<JobsRequest['order'], 'resellerStoreId' | 'externalOrderId'>;
const orderKey = (order: OrderKey) => `order:${order.resellerStoreId}:${order.externalOrderId}`;

const unmatchedLines = (lines: OrderLine[]) => lines.map(({ sku, title, vendor, quantity }) => ({ sku, title, vendor, quantity }));

/** A line vendor that more than one active supplier's tag matches: routed to none of them. */
interface AmbiguousVendor {
  /** The vendor as the first such line of the order gives it. */
  vendor: string;
  sourceStoreIds: string[];
}

/**
 * An order's lines matched to the reseller store's active suppliers, by their tags as normalised
 * today (a store's stored vendor_key may predate the current fold). Tags are unique among a
 * reseller store's active suppliers once folded (decisions.md), but two stored before a fix of the
 * fold (NFKC, 'ẞ') can fold alike: a line both match goes to neither, so it is never placed twice,
 * and is reported with the unmatched ones, naming the suppliers that share it.
 */
function matchLines(lines: OrderLine[], sources: RoutableSource[]): { matched: RoutableSource[]; unmatched: OrderLine[]; ambiguous: AmbiguousVendor[] } {
  const byKey = new Map<string, RoutableSource[]>();
  for (const source of sources) {
    const key = normaliseVendor(source.vendorTag);
    // A blank tag matches no line (vendorMatches).
    if (key !== '') byKey.set(key, [...(byKey.get(key) ?? []), source]);
  }
  const matched = new Set<RoutableSource>();
  const unmatched: OrderLine[] = [];
  const ambiguous = new Map<string, AmbiguousVendor>();
  for (const line of lines) {
    const key = normaliseVendor(line.vendor);
    const candidates = byKey.get(key) ?? [];
    if (candidates.length === 1) {
      matched.add(candidates[0]!);
      continue;
    }
    unmatched.push(line);
    if (candidates.length > 1 && !ambiguous.has(key)) {
      ambiguous.set(key, { vendor: line.vendor, sourceStoreIds: candidates.map((source) => source.id).sort() });
    }
  }
  // In the order of the sources, as before: the jobs are created in that order.
  return { matched: sources.filter((source) => matched.has(source)), unmatched, ambiguous: [...ambiguous.values()] };
}

/**
 * Routing a reseller order has this one home: matching its lines to suppliers by vendor, the routing
 * transaction (the order recorded as routed, its sync jobs, their audit entries, queue messages and
 * events), routed-once, and the order's own events (`order.unmatched`, `order.reconciled`).
 *
 * This is the order webhook's hot path: orders arriving while routing transactions are in flight
 * are routed together in the next (group commit, src/db/group-commit.ts): one statement records
 * the orders, one inserts the jobs with their audit entries and events (unless an endpoint
 * subscribes: the outbox then writes them with their deliveries) and takes the orders' cancellation
 * locks, pg-boss's insert their messages, one reads the orders' cancellations, and two more per
 * order with unmatched lines, rather than through the unit of work. Each round trip counts: under
 * load a reply from PostgreSQL waits while the process verifies the webhooks that arrived together
 * (README "Performance").
 *
 * One routing transaction at a time per process: the orders that arrive meanwhile wait for it and go
 * together in the next, so the busier the process, the more orders a transaction carries. With four
 * in flight, each carried a fraction of them and the statements and commits were paid four times
 * over (measured: PostgreSQL's CPU per order webhook 0.37 ms against 0.24 with one, and capacity 400
 * orders/s against 450). The transaction holds only short locks (an order's routing and cancellation
 * locks, which other transactions hold for a few statements), so it does not wait long behind anything.
 */
export class OrderRouter implements OrderRouting, OrderCancelling {
  private readonly routing = new GroupCommit((requests: RoutingRequest[]) => this.routeOrders(requests), { maxItems: 64, maxInFlight: 1 });

  /**
   * `activeSources`: a reseller store's active source stores (the order webhook caches them);
   * `cancellations`: the cancellations feature (src/cancellations/), for the order's cancellations.
   */
  constructor(
    private readonly deps: { routedOrders: RoutedOrderRepository; outbox: Outbox; metrics: Metrics },
    private readonly syncJobs: SyncJobService,
    private readonly activeSources: (resellerStoreId: string) => Promise<RoutableSource[]>,
    private readonly cancellations: OrderCancellations,
  ) {}

  routedAmong(resellerStoreId: string, externalOrderIds: string[]): Promise<Set<string>> {
    return this.deps.routedOrders.routedAmong(resellerStoreId, externalOrderIds);
  }

  /**
   * Routes an order, from its webhook or from reconciliation: one sync job per active source store
   * whose vendor tag matches a line. Jobs that already exist for the order (a redelivery) are
   * returned, not created again. The order is recorded as routed in the same transaction;
   * `firstRouting` says whether this call did it.
   */
  async route(store: OrderStore, order: ResellerOrder, via: RoutingVia): Promise<RoutedOrder> {
    const { matched, unmatched, ambiguous } = matchLines(order.lines, await this.activeSources(store.id));
    const creator: JobCreator = {
      actorId: SYSTEM_ACTOR,
      metadata: via.source === 'webhook' ? { origin: 'webhook', webhookId: via.webhookId } : { origin: 'reconciliation', reconciliationId: via.reconciliationId },
    };
    // The job keeps the order as sold; what the storefront shows cancelled is cut from it by the
    // cancellation routing records for it (src/cancellations/listed.ts), as a late webhook's would be.
    const { cancelledBefore, ...sold } = order;
    const orderToRoute = { ownerId: store.ownerId, resellerStoreId: store.id, externalOrderId: order.externalOrderId, order: sold };
    const routed = await this.routing.submit({
      order: orderToRoute,
      sourceStoreIds: matched.map((source) => source.id),
      creator,
      source: via.source,
      unmatched:
        unmatched.length > 0 ? { ownerId: store.ownerId, resellerStoreId: store.id, externalOrderId: order.externalOrderId, lines: unmatchedLines(unmatched), ambiguous } : null,
      reconciliationId: via.source === 'reconciliation' ? via.reconciliationId : null,
      cancelledBefore: cancelledBefore ?? null,
    });
    this.deps.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, routed.jobs.filter((job) => job.created).length);
    return routed;
  }

  /**
   * A storefront cancellation (its webhook, or the divergence watch): see `OrderCancelling.cancel`.
   * Recorded and applied under the order's cancellation lock, which the routing of the order also
   * takes once its jobs are inserted: whichever of the two comes second sees the other.
   */
  cancel(store: OrderStore, cancellation: StorefrontCancellation, via: CancellationVia): Promise<OrderCancelled> {
    return this.cancellations.cancelOrder(store, cancellation, via);
  }

  /**
   * An order is routed once (operations.md): the first routing (recorded in routed_orders) decides
   * its jobs, and a later one (a redelivery, reconciliation) gets those jobs back and creates none,
   * even after a supplier was deleted, re-created with the same vendor tag or added.
   */
  private routeOrders(requests: RoutingRequest[]): Promise<RoutedOrder[]> {
    return this.deps.routedOrders.transaction(async (trx) => {
      const now = new Date();
      // First, in key order: concurrent routings of one order queue up here, before any job insert.
      const first = await this.deps.routedOrders.recordIn(trx, requests.map(({ order, source }) => ({ ...order, source })), now);
      const routing = requests.filter((_, index) => first[index]);
      // The job insert also takes the orders' cancellation locks (one round trip less), as `applyAtRouting` would.
      const lockKeys = this.cancellations.lockKeysOf(routing.map(({ order }) => order));
      const created = await this.syncJobs.createIn(trx, routing, now, lockKeys);
      const jobsOf = new Map(routing.map((request, index) => [request, created.jobs[index]!]));
      // After the inserts, so an order routed twice in this group finds the jobs its first routing made.
      const repeated = await this.jobsOfRoutedOrders(trx, requests.filter((request) => !jobsOf.has(request)));
      const events: NewEvent[] = [...created.events];
      // Only the first routing of an order decides what went unmatched: a redelivery matched against
      // today's suppliers (one deleted since, say) would report lines that were routed.
      await this.recordUnmatched(trx, routing, events);
      const reconciled = routing.filter((request) => request.reconciliationId !== null);
      await insertAudit(trx, reconciled.map((request) => reconciledAudit(request)), now);
      for (const request of reconciled) {
        const syncJobIds = jobsOf.get(request)!.map((job) => job.id);
        events.push(orderReconciledEvent({ ...request.order, syncJobIds }));
      }
      // The events of all this, in the same transaction (src/events/outbox.ts).
      await this.deps.outbox.append(trx, events);
      // An order cancelled before it was routed: its new jobs end (not_placed) or are cut here, in this
      // transaction, before any worker can take them (src/cancellations/service.ts `applyAtRouting`).
      await this.cancellations.applyAtRouting(trx, routing.map(({ order, cancelledBefore }) => ({ ...order, cancelledBefore })));
      return requests.map((request, index) => ({
        jobs: jobsOf.get(request)?.map(({ id, created }) => ({ id, created })) ?? repeated.get(orderKey(request.order)) ?? [],
        firstRouting: first[index] ?? false,
      }));
    });
  }

  /**
   * The lines no supplier matched at an order's first routing, recorded once per order however often
   * it is delivered (an audit entry under an advisory lock on the order) with their `order.unmatched` event. Locks are taken
   * in a fixed order, so two groups never wait on each other's.
   */
  private async recordUnmatched(trx: Trx, requests: RoutingRequest[], events: NewEvent[]): Promise<void> {
    const once = requests.filter((request) => request.unmatched).sort((a, b) => orderKey(a.order).localeCompare(orderKey(b.order)));
    for (const request of once) {
      const unmatched = request.unmatched!;
      const metadata = { lines: unmatched.lines, ...(unmatched.ambiguous.length > 0 && { ambiguous: unmatched.ambiguous }) };
      if (await insertAuditOnce(trx, orderAudit(request, 'order.lines_unmatched', metadata), orderKey(request.order))) {
        events.push(orderUnmatchedEvent(unmatched));
      }
    }
  }

  /** The jobs of orders routed before, oldest first (the order their routing made them in), by order key. */
  private async jobsOfRoutedOrders(trx: Trx, requests: RoutingRequest[]): Promise<Map<string, { id: string; created: boolean }[]>> {
    const byOrder = new Map<string, { id: string; created: boolean }[]>(requests.map((request) => [orderKey(request.order), []]));
    for (const job of await this.syncJobs.jobsOfOrdersIn(trx, requests.map(({ order }) => order))) {
      byOrder.get(orderKey(job))?.push({ id: job.id, created: false });
    }
    return byOrder;
  }
}

function orderAudit(request: RoutingRequest, action: string, metadata: Record<string, unknown>): AuditRecord {
  return {
    ownerId: request.order.ownerId,
    resellerStoreId: request.order.resellerStoreId,
    action,
    resourceType: 'order',
    resourceId: request.order.externalOrderId,
    actorId: SYSTEM_ACTOR,
    metadata,
  };
}

/** `order.reconciled`: reconciliation routed the order first. */
const reconciledAudit = (request: RoutingRequest): AuditRecord =>
  orderAudit(request, 'order.reconciled', { reconciliationId: request.reconciliationId, sourceStoreIds: request.sourceStoreIds });
