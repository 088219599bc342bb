import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { insertAudit, insertAuditOnce, type AuditRecord } from '../audit-log/repository.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import { syncJobKind } from '../attempts/kinds.ts';
import { findAttempts } from '../attempts/repository.ts';
import type { AppContext } from '../context.ts';
import { GroupCommit } from '../db/group-commit.ts';
import type { Trx } from '../db/sql.ts';
import { orderReconciledEvent, orderUnmatchedEvent, syncJobEvent, type NewEvent, type UnmatchedOrder } from '../events/types.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import { FulfillmentRepository } from '../fulfillments/repository.ts';
import type { RoutingSource } from '../orders/entity.ts';
import { RoutedOrderRepository } from '../orders/repository.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { newMessageId } from '../queue/queue.ts';
import type { SourceStoreService } from '../source-stores/service.ts';
import { AppError, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Page } from '../shared/paging.ts';
import { jobAuditRecord } from './attempt.ts';
import { cancellationsOfJob } from '../cancellations/views.ts';
import type { CancellationView } from '../cancellations/presenter.ts';
import type { SyncJob } from './entity.ts';
import { SyncJobRepository, type CandidateJob, type JobCandidate, type JobFilters, type RetryFilters } from './repository.ts';

/** A reseller order to route: what every job created for it shares. */
export interface OrderToRoute {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  /** The order as the webhook delivered it; null makes the worker read it from the platform. */
  order: ResellerOrder | null;
}

export interface JobWithFulfillments {
  job: SyncJob;
  fulfillments: Fulfillment[];
  /** The fulfillments' timelines, by fulfillment id, oldest attempt first. */
  fulfillmentAttempts: Map<string, AttemptEntry[]>;
  /** The job's cancellations with their timelines, oldest first (none when left out). */
  cancellations?: CancellationView[];
}

/** Who caused a job's creation, for its audit entry. */
export interface JobCreator {
  actorId: string;
  metadata: Record<string, unknown>;
}

export interface RoutedJob {
  id: string;
  created: boolean;
}

/** How an order came to be routed, for `route`. */
export interface Routing {
  source: RoutingSource;
  /** Recorded once per order however often it is delivered (the lines no supplier matched). */
  onceForOrder?: AuditRecord | undefined;
  /** Recorded only by the routing that routes the order first (`order.reconciled`). */
  onFirstRouting?: AuditRecord | undefined;
  /**
   * Holds the first attempt of the jobs this routing creates for this long (an order whose
   * cancellation came first: the cancellation ends them before any worker may place them).
   */
  holdMs?: number | undefined;
}

/** The order's jobs, and whether this routing was the first of the order. */
export interface RoutedOrder {
  jobs: RoutedJob[];
  firstRouting: boolean;
}

interface RoutingRequest {
  order: OrderToRoute;
  sourceStoreIds: string[];
  creator: JobCreator;
  onceForOrder: AuditRecord | undefined;
  /** Null for a manual job (POST /v1/sync_jobs), which does not route the order. */
  routing: Routing | null;
}

/** Reads of a job a manual retry makes before giving up on a job that keeps changing under it. */
const RETRY_ROUNDS = 3;

const orderKey = (order: Pick<OrderToRoute, 'resellerStoreId' | 'externalOrderId'>) => `order:${order.resellerStoreId}:${order.externalOrderId}`;

const zip = <A, B>(as: A[], bs: B[]): [A, B][] => as.map((a, i) => [a, bs[i]!]);

export class SyncJobService {
  /** Orders arriving while routing transactions are in flight are routed together in the next (`createJobs`). */
  private readonly routing = new GroupCommit((requests: RoutingRequest[]) => this.routeOrders(requests), { maxItems: 64, maxInFlight: 4 });
  private readonly jobs: SyncJobRepository;
  private readonly fulfillments: FulfillmentRepository;
  private readonly routedOrders: RoutedOrderRepository;

  constructor(
    private readonly ctx: AppContext,
    private readonly sourceStores: SourceStoreService,
  ) {
    this.jobs = new SyncJobRepository(ctx.orm);
    this.fulfillments = new FulfillmentRepository(ctx.orm);
    this.routedOrders = new RoutedOrderRepository(ctx.orm);
  }

  /** POST /v1/sync_jobs: the existing job for the order and source store, or a new one. */
  async createManual(principal: Principal, sourceStoreId: string, externalOrderId: string): Promise<JobWithFulfillments & { created: boolean }> {
    const source = await this.sourceStores.findActiveById(principal, sourceStoreId);
    if (!source) throw validationFailed('source_store_id', 'No active source store with this id.');
    const [result] = await this.createJobs(
      { ownerId: source.ownerId, resellerStoreId: source.resellerStoreId, externalOrderId, order: null },
      [source.id],
      { actorId: actorOf(principal), metadata: { origin: 'manual', ...auditContext(principal) } },
    );
    return { ...(await this.get(principal, result!.id)), created: result!.created };
  }

  /**
   * Creates the order's jobs for these source stores that do not exist yet, with their queue
   * messages and audit entries, and returns every one of them, new or not, in the order asked. The
   * unique index on (order, source store) decides which jobs are new (`on conflict do nothing`):
   * concurrent deliveries of one order cannot create a duplicate, and a redelivery gets the
   * existing jobs back.
   *
   * This is the order webhook's hot path: orders arriving together are written together, in one
   * transaction (see `routeOrders`: one statement for the jobs and their audit entries, pg-boss's
   * insert for their messages, and two more per order with unmatched lines), rather than through
   * the unit of work.
   *
   * `onceForOrder` is an audit entry recorded once per order however often it is delivered (the
   * lines no supplier matched), under an advisory lock on the order.
   */
  async createJobs(order: OrderToRoute, sourceStoreIds: string[], creator: JobCreator, onceForOrder?: AuditRecord): Promise<RoutedJob[]> {
    const { jobs } = await this.submit({ order, sourceStoreIds, creator, onceForOrder, routing: null });
    return jobs;
  }

  /**
   * Routes a reseller order (its webhook, or reconciliation): `createJobs`, and in the same
   * transaction the order is recorded as routed (routed_orders), so reconciliation knows it was,
   * even when no supplier matched it.
   */
  route(order: OrderToRoute, sourceStoreIds: string[], creator: JobCreator, routing: Routing): Promise<RoutedOrder> {
    return this.submit({ order, sourceStoreIds, creator, onceForOrder: routing.onceForOrder, routing });
  }

  private async submit(request: RoutingRequest): Promise<RoutedOrder> {
    const routed = await this.routing.submit(request);
    this.ctx.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, routed.jobs.filter((job) => job.created).length);
    return routed;
  }

  /**
   * An order is routed once (operations.md): the first routing (recorded in routed_orders) decides
   * its jobs, and a later one (a redelivery, reconciliation) gets those jobs back and creates none,
   * even after a supplier was deleted, re-created with the same vendor tag or added. A manual job
   * (`routing` null) is not a routing: it is created unless it exists.
   */
  private routeOrders(requests: RoutingRequest[]): Promise<RoutedOrder[]> {
    return this.jobs.transaction(async (trx) => {
      const now = new Date();
      const recorded = requests.filter((request) => request.routing !== null);
      // First, in key order: concurrent routings of one order queue up here, before any job insert.
      const first = await this.routedOrders.recordIn(trx, recorded.map(({ order, routing }) => ({ ...order, source: routing!.source })), now);
      const firstRouting = new Map(recorded.map((request, index) => [request, first[index]!]));
      const creating = requests.filter((request) => request.routing === null || firstRouting.get(request));
      const routed = new Map(zip(creating, await this.insertJobs(trx, creating, now)));
      const created = [...routed.values()].flat().filter((job) => job.created);
      const holds = new Map([...routed].flatMap(([request, jobs]) => jobs.map((job) => [job.id, request.routing?.holdMs ?? 0] as const)));
      await this.ctx.queue.insertIn(
        trx,
        'syncJob',
        created.map((job) => ({ id: job.queueMessageId!, message: syncJobKind.message(job.id), ...(holds.get(job.id) ? { delayMs: holds.get(job.id) } : {}) })),
      );
      // After the inserts, so an order routed twice in this group finds the jobs its first routing made.
      const repeated = await this.jobsOfRoutedOrders(trx, requests.filter((request) => !routed.has(request)));
      const events = createdJobEvents(creating, creating.map((request) => routed.get(request)!), now);
      // Advisory locks in a fixed order, so two groups never wait on each other's (the jobs are inserted sorted too).
      const once = requests.filter((request) => request.onceForOrder).sort((a, b) => orderKey(a.order).localeCompare(orderKey(b.order)));
      for (const request of once) {
        if (await insertAuditOnce(trx, request.onceForOrder!, orderKey(request.order))) events.push(unmatchedOrderEvent(request.onceForOrder!));
      }
      const firstAudits = recorded.filter((request) => firstRouting.get(request) && request.routing!.onFirstRouting);
      await insertAudit(trx, firstAudits.map((request) => request.routing!.onFirstRouting!), now);
      for (const request of firstAudits) {
        const syncJobIds = (routed.get(request) ?? []).map((job) => job.id);
        events.push(orderReconciledEvent({ ownerId: request.order.ownerId, resellerStoreId: request.order.resellerStoreId, externalOrderId: request.order.externalOrderId, syncJobIds }));
      }
      // The events of all this, in the same transaction (src/events/outbox.ts).
      await this.ctx.outbox.append(trx, events);
      return requests.map((request) => ({
        jobs: routed.get(request)?.map(({ id, created }) => ({ id, created })) ?? repeated.get(orderKey(request.order)) ?? [],
        firstRouting: firstRouting.get(request) ?? false,
      }));
    });
  }

  /** The jobs of orders routed before, oldest first (the order their routing made them in), by order key. */
  private async jobsOfRoutedOrders(trx: Trx, requests: RoutingRequest[]): Promise<Map<string, RoutedJob[]>> {
    const byOrder = new Map<string, RoutedJob[]>(requests.map((request) => [orderKey(request.order), []]));
    if (requests.length === 0) return byOrder;
    const rows = await this.jobs.findByOrders(trx, requests.map(({ order }) => ({ resellerStoreId: order.resellerStoreId, externalOrderId: order.externalOrderId })));
    for (const row of rows) {
      byOrder.get(orderKey({ resellerStoreId: row.reseller_store_id, externalOrderId: row.external_order_id }))?.push({ id: row.id, created: false });
    }
    return byOrder;
  }

  /** Every request's jobs, in the order of its source stores: inserted, or found existing. */
  private async insertJobs(trx: Trx, requests: RoutingRequest[], now: Date): Promise<CandidateJob[][]> {
    if (requests.length === 0) return [];
    const initial = syncJobKind.initialColumns(now) as SyncJob;
    const candidates: JobCandidate[][] = requests.map(({ order, sourceStoreIds, creator }) =>
      sourceStoreIds.map((sourceStoreId) => ({
        id: newId('syncJob'),
        owner_id: order.ownerId,
        reseller_store_id: order.resellerStoreId,
        source_store_id: sourceStoreId,
        external_order_id: order.externalOrderId,
        origin: order.order ? 'webhook' : 'manual',
        order: order.order,
        queue_message_id: newMessageId(),
        audit_id: newId('auditEntry'),
        audit_metadata: { externalOrderId: order.externalOrderId, sourceStoreId, ...creator.metadata },
        actor_id: creator.actorId,
      })),
    );
    const found = new Map((await this.jobs.insertUnlessExists(trx, candidates.flat(), initial, now)).map((row) => [row.candidate, row]));
    // The statement's snapshot predates it: a job that a concurrent delivery committed while this
    // insert waited on the unique index, or that another request of this group inserted, was neither
    // inserted for its candidate nor seen. Read those again: committed now, or this transaction's own.
    const missing = candidates.flat().filter((candidate) => !found.has(candidate.id));
    if (missing.length > 0) {
      const late = await this.jobs.findByOrderKeys(trx, missing);
      for (const candidate of missing) {
        const job = late.find((row) => row.external_order_id === candidate.external_order_id && row.source_store_id === candidate.source_store_id);
        if (job) found.set(candidate.id, { candidate: candidate.id, id: job.id, queueMessageId: null, created: false });
      }
    }
    return candidates.map((forRequest) =>
      forRequest.map((candidate) => {
        const job = found.get(candidate.id);
        if (!job) throw new Error(`no sync job for order ${candidate.external_order_id} and source store ${candidate.source_store_id}`);
        return job;
      }),
    );
  }

  async get(principal: Principal, id: string): Promise<JobWithFulfillments> {
    const job = await this.jobs.findOwned(principal.userId, id);
    if (!job) throw notFound();
    return { job, ...(await this.fulfillmentsOf(job.id)) };
  }

  /** The job's timeline: every attempt, oldest first. */
  async attempts(principal: Principal, id: string): Promise<AttemptEntry[]> {
    const job = await this.jobs.findOwned(principal.userId, id);
    if (!job) throw notFound();
    return findAttempts(this.ctx.orm, [job.id]);
  }

  private async fulfillmentsOf(syncJobId: string): Promise<Omit<JobWithFulfillments, 'job'>> {
    const fulfillments = await this.fulfillments.listForJob(syncJobId);
    const fulfillmentAttempts = new Map<string, AttemptEntry[]>(fulfillments.map((fulfillment) => [fulfillment.id, []]));
    for (const entry of await findAttempts(this.ctx.orm, [...fulfillmentAttempts.keys()])) fulfillmentAttempts.get(entry.rowId)?.push(entry);
    return { fulfillments, fulfillmentAttempts, cancellations: await cancellationsOfJob(this.ctx.orm, syncJobId) };
  }

  list(principal: Principal, filters: JobFilters): Promise<Page<SyncJob>> {
    return this.jobs.list(principal.userId, filters);
  }

  /**
   * Manual retry of a failed or dead job. The new queue message id makes any older message for
   * the job (a scheduled automatic retry) stale, so it can no longer move the job. The write is
   * conditional on the version read, like a worker's; a retry that lost the race to another change
   * reads the job again. So of concurrent retries one revives the job and every other then finds it
   * pending: 400 sync_job_not_retryable, the refusal the contract declares (it used to be a 409).
   */
  async retry(principal: Principal, id: string): Promise<JobWithFulfillments> {
    for (let round = 1; ; round++) {
      const job = await this.jobs.findOwned(principal.userId, id);
      if (!job) throw notFound();
      if (await this.revive(principal, job)) {
        this.ctx.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' });
        return { job, ...(await this.fulfillmentsOf(job.id)) };
      }
      if (round === RETRY_ROUNDS) {
        throw new AppError('unavailable', { message: 'The job kept changing while it was being retried; try again.', retryAfterSeconds: 1 });
      }
    }
  }

  /** Moves a failed or dead job to pending with a fresh queue message; false when it changed since it was read. */
  private async revive(principal: Principal, job: SyncJob): Promise<boolean> {
    const now = new Date();
    if (!syncJobKind.transition(job, { type: 'RETRY', at: now.toISOString() }, now)) {
      throw new AppError('sync_job_not_retryable', {
        message: `Only failed or dead sync jobs can be retried; this one is ${job.status}.`,
        details: { status: job.status },
      });
    }
    job.queueMessageId = newMessageId();
    const audit = jobAuditRecord(job, 'sync_job.retried', actorOf(principal), { attempts: job.attempts, ...auditContext(principal) });
    const fulfillments = await this.fulfillmentsOf(job.id);
    return this.jobs.transaction(async (trx) => {
      const [moved] = await this.jobs.writeTransitions(trx, [{ row: job, result: syncJobKind.resultOf(job), audit }]);
      if (!moved) return false;
      await this.ctx.queue.insertIn(trx, 'syncJob', [{ id: job.queueMessageId!, message: syncJobKind.message(job.id) }]);
      await this.ctx.outbox.append(trx, [syncJobEvent('sync_job.retried', job, fulfillments)]);
      return true;
    });
  }

  /**
   * Retries up to `limit` matching jobs, oldest first, each exactly as `retry` does (the machine's
   * RETRY, a new queue message, an audit entry with `bulk: true`) but in a fixed number of
   * statements: one read, then one transaction of two, the version-checked write of every job with
   * its audit entry and pg-boss's insert of the messages of the jobs it moved. A job that moved
   * since it was read (a worker took it, someone retried it) is skipped, not overwritten.
   */
  async bulkRetry(principal: Principal, filters: RetryFilters, limit: number): Promise<{ retriedIds: string[]; hasMore: boolean }> {
    const candidates = await this.jobs.findRetryable(principal.userId, filters, limit + 1);
    const now = new Date();
    const writes = candidates
      .slice(0, limit)
      .filter((job) => syncJobKind.transition(job, { type: 'RETRY', at: now.toISOString() }, now))
      .map((job) => {
        job.queueMessageId = newMessageId();
        const audit = jobAuditRecord(job, 'sync_job.retried', actorOf(principal), { attempts: job.attempts, ...auditContext(principal), bulk: true });
        return { row: job, result: syncJobKind.resultOf(job), audit };
      });
    const retried = await this.jobs.transaction(async (trx) => {
      const moved = await this.jobs.writeTransitions(trx, writes);
      const jobs = writes.filter((_, i) => moved[i]).map(({ row }) => row);
      await this.ctx.queue.insertIn(trx, 'syncJob', jobs.map((job) => ({ id: job.queueMessageId!, message: syncJobKind.message(job.id) })));
      // Failed and dead jobs have no fulfillments (see syncJobEvent).
      await this.ctx.outbox.append(trx, jobs.map((job) => syncJobEvent('sync_job.retried', job)));
      return jobs;
    });
    this.ctx.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, retried.length);
    return { retriedIds: retried.map((job) => job.id), hasMore: candidates.length > limit };
  }
}

/** `sync_job.created` for each job the routing inserted, as the job's GET shows it then: just created, no fulfillments. */
function createdJobEvents(requests: RoutingRequest[], routed: CandidateJob[][], now: Date): NewEvent[] {
  const initial = syncJobKind.initialColumns(now);
  return requests.flatMap(({ order, sourceStoreIds }, i) =>
    routed[i]!.flatMap((job, j) => {
      if (!job.created) return [];
      const created = { ...initial, id: job.id, ownerId: order.ownerId, resellerStoreId: order.resellerStoreId, sourceStoreId: sourceStoreIds[j]!, externalOrderId: order.externalOrderId, sourceOrderId: null, createdAt: now, updatedAt: now };
      return [syncJobEvent('sync_job.created', created as SyncJob)];
    }),
  );
}

/** `order.unmatched`, from the once-per-order audit entry of the lines no supplier matched (src/webhooks/service.ts). */
function unmatchedOrderEvent(audit: AuditRecord): NewEvent {
  const lines = (audit.metadata?.lines ?? []) as UnmatchedOrder['lines'];
  return orderUnmatchedEvent({ ownerId: audit.ownerId, resellerStoreId: audit.resellerStoreId, externalOrderId: audit.resourceId, lines });
}
