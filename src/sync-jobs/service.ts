import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import { syncJobKind } from './kind.ts';
import type { Trx } from '../db/sql.ts';
import type { Outbox } from '../events/outbox.ts';
import type { NewEvent } from '../events/types.ts';
import type { Metrics } from '../metrics/index.ts';
import { syncJobEvent, syncJobEventsIn } from './events.ts';
import type { AttemptTimelines, CancellationReads, FulfillmentReads, Storefronts } from './ports.ts';
import type { JobWithFulfillments } from './present.ts';

export type { JobWithFulfillments };
import type { Fulfillment } from '../fulfillments/entity.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { canonicalOrderId } from '../platforms/payload.ts';
import { MAX_NUMERIC_ORDER_ID_DIGITS } from '../../contract/limits.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import type { SourceStoreService } from '../source-stores/service.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import { conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Page } from '../shared/paging.ts';
import { jobAuditRecord } from './attempt.ts';
import { retryByHand } from '../attempts/manual-retry.ts';
import type { SyncJob } from './entity.ts';
import type { SyncJobRepository, CandidateJob, JobCandidate, JobFilters, OrderIdMatch, RetryFilters } from './repository.ts';

const NUMERIC_ORDER_ID = new RegExp(`^\\d{1,${MAX_NUMERIC_ORDER_ID_DIGITS}}$`);

/** A reseller order to route: what every job created for it shares. */
export interface OrderToRoute {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  /** The order as the webhook delivered it; null makes the worker read it from the platform. */
  order: ResellerOrder | null;
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

/** The jobs to create for one order: one per source store, unless it exists. */
export interface JobsRequest {
  order: OrderToRoute;
  sourceStoreIds: string[];
  creator: JobCreator;
}

/**
 * What `createIn` wrote: each request's jobs (inserted or found), and the `sync_job.created` events
 * left to append: none unless an endpoint subscribes to them (the insert writes them otherwise).
 */
export interface CreatedJobs {
  jobs: CandidateJob[][];
  events: NewEvent[];
}

/** What the sync jobs' service works with, built once by the composition root (src/services.ts). */
export interface SyncJobServiceDeps {
  /** Built with what a job's transitions also write in their statement (src/workers/kinds.ts `SETTLED_STEPS`), for the manual retries written here. */
  jobs: SyncJobRepository;
  timelines: AttemptTimelines;
  queue: Queue;
  outbox: Outbox;
  metrics: Metrics;
}

export class SyncJobService {
  private readonly jobs: SyncJobRepository;

  constructor(
    private readonly deps: SyncJobServiceDeps,
    private readonly sourceStores: SourceStoreService,
    private readonly fulfillments: FulfillmentReads,
    private readonly cancellations: CancellationReads,
    private readonly storefronts: Storefronts,
  ) {
    this.jobs = deps.jobs;
  }

  /** POST /v1/sync_jobs: the existing job for the order and source store, or a new one. */
  async createManual(principal: Principal, sourceStoreId: string, externalOrderId: string): Promise<JobWithFulfillments & { created: boolean }> {
    const source = await this.sourceStores.findOwnedById(principal, sourceStoreId);
    if (!source || source.deletedAt) return this.repeatForDeletedSupplier(principal, source, externalOrderId);
    const platform = await this.sourceStores.storefrontPlatformOf(principal, source);
    // The contract took any id the service keeps (a custom storefront's are strings); platform_a
    // and platform_b number their orders.
    if (platform !== 'custom' && !NUMERIC_ORDER_ID.test(externalOrderId)) {
      throw validationFailed('external_order_id', `external_order_id: a ${platform} order id is a number (1 to ${MAX_NUMERIC_ORDER_ID_DIGITS} digits).`);
    }
    // One order, one job: `01001` on a storefront that numbers its orders is order 1001, whose job
    // (routed from its webhook, or created by hand before) must be found, not a second one made.
    const orderId = canonicalOrderId(platform, externalOrderId);
    if (orderId === null) throw validationFailed('external_order_id', 'external_order_id: 0 is not an order id.');
    await this.refuseTwin(principal, source, orderId);
    const [result] = await this.createJobs(
      { ownerId: source.ownerId, resellerStoreId: source.resellerStoreId, externalOrderId: orderId, order: null },
      [source.id],
      { actorId: actorOf(principal), metadata: { origin: 'manual', ...auditContext(principal) } },
    );
    return { ...(await this.get(principal, result!.id)), created: result!.created };
  }

  /**
   * POST /v1/sync_jobs for a source store that is not active: a repeat of a POST made before the
   * store was deleted gets that job back (the POST is idempotent, interface.md 4.8: a client
   * retrying after a timeout must not be told its job does not exist); anything else, an unknown,
   * another user's or a deleted store with no job for the order, is 400 alike, and nothing is made.
   */
  private async repeatForDeletedSupplier(principal: Principal, deleted: SourceStore | null, externalOrderId: string): Promise<JobWithFulfillments & { created: boolean }> {
    const refused = validationFailed('source_store_id', 'No active source store with this id.');
    if (!deleted) throw refused;
    const platform = await this.sourceStores.storefrontPlatformOf(principal, deleted).catch(() => null);
    const orderId = platform && canonicalOrderId(platform, externalOrderId);
    const job = orderId ? await this.jobs.findOwnedOfOrder(principal.userId, orderId, deleted.id) : null;
    if (!job) throw refused;
    return { ...(await this.get(principal, job.id)), created: false };
  }

  /**
   * A supplier with an active twin (another supplier of the reseller store whose vendor tag folds
   * alike, src/source-stores/twins.ts) gets no new manual job: every line it matches, the twin
   * matches too, so one POST per twin would place the same lines twice. Routing places such lines on
   * neither and reports them (`order.unmatched`, src/orders/routing.ts); here the refusal is the
   * report: 409 `conflict`, reason `vendor_tag_ambiguous`, naming the suppliers that share the tag.
   * A job that exists already is still returned (the POST is idempotent); its attempt places nothing
   * while the twin is active (src/sync-jobs/attempt.ts).
   */
  private async refuseTwin(principal: Principal, source: { id: string; resellerStoreId: string; vendorTag: string }, orderId: string): Promise<void> {
    const twins = await this.sourceStores.activeTwinsOf(source);
    if (twins.length === 0) return;
    if (await this.jobs.findOwnedOfOrder(principal.userId, orderId, source.id)) return;
    throw conflict(
      'vendor_tag_ambiguous',
      `Another active source store of this reseller store (${twins.join(', ')}) has a vendor tag that matches the same lines as this one's: a job for either would place lines the other also matches. Delete one of them first.`,
      'source_store_id',
      { sourceStoreIds: [source.id, ...twins].sort() },
    );
  }

  /**
   * Creates the order's jobs for these source stores that do not exist yet, with their queue
   * messages and audit entries, and returns every one of them, new or not, in the order asked. The
   * unique index on (order, source store) decides which jobs are new (`on conflict do nothing`):
   * concurrent requests for one order cannot create a duplicate, and a repeat gets the existing
   * jobs back. A manual job is not a routing of the order (src/orders/routing.ts routes orders), but
   * a cancellation of the order the storefront sent before applies to it as it would at routing: a
   * cancelled order is never placed, whoever creates its job.
   */
  async createJobs(order: OrderToRoute, sourceStoreIds: string[], creator: JobCreator): Promise<RoutedJob[]> {
    const [jobs] = await this.jobs.transaction(async (trx) => {
      const created = await this.createIn(trx, [{ order, sourceStoreIds, creator }], new Date());
      await this.deps.outbox.append(trx, created.events);
      await this.cancellations.applyAtRouting(trx, [order]);
      return created.jobs;
    });
    this.deps.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, jobs!.filter((job) => job.created).length);
    return jobs!.map(({ id, created }) => ({ id, created }));
  }

  /**
   * In the caller's transaction (the routing's, src/orders/routing.ts, on the order webhook's hot
   * path): every request's jobs inserted unless they exist, in one statement with their audit
   * entries and, when no endpoint subscribes to them, their `sync_job.created` events; the new jobs'
   * queue messages in one more. Returns the jobs and the events the insert could not write (they
   * need deliveries), for the caller to append with its own (and to count the new jobs in
   * `attempt_transitions_total` once it committed). The insert takes the locks on `lockKeys` after
   * the jobs (the routing's cancellation locks) when there is any request.
   */
  async createIn(trx: Trx, requests: JobsRequest[], now: Date, lockKeys: string[] = []): Promise<CreatedJobs> {
    const { jobs, events } = await this.insertJobs(trx, requests, now, lockKeys);
    const created = jobs.flat().filter((job) => job.created);
    await this.deps.queue.insertIn(trx, syncJobKind.queue, created.map((job) => ({ id: job.queueMessageId!, message: syncJobKind.message(job.id) })));
    // Written by the insert unless an endpoint subscribes to them (they need deliveries: the outbox's).
    return { jobs, events: created.filter((job) => !job.eventsWritten).flatMap((job) => events.get(job.candidate)!) };
  }

  /** The jobs of these orders, oldest first (the order their routing made them in), by order. */
  async jobsOfOrdersIn(trx: Trx, orders: Pick<OrderToRoute, 'resellerStoreId' | 'externalOrderId'>[]): Promise<{ resellerStoreId: string; externalOrderId: string; id: string }[]> {
    if (orders.length === 0) return [];
    const rows = await this.jobs.findByOrders(trx, orders.map(({ resellerStoreId, externalOrderId }) => ({ resellerStoreId, externalOrderId })));
    return rows.map((row) => ({ resellerStoreId: row.reseller_store_id, externalOrderId: row.external_order_id, id: row.id }));
  }

  /**
   * Every request's jobs, in the order of its source stores: inserted, or found existing; and each
   * candidate's `sync_job.created` event, by candidate.
   */
  private async insertJobs(trx: Trx, requests: JobsRequest[], now: Date, lockKeys: string[]): Promise<{ jobs: CandidateJob[][]; events: Map<string, NewEvent[]> }> {
    if (requests.length === 0) return { jobs: [], events: new Map() };
    const initial = syncJobKind.initialColumns(now) as SyncJob;
    const candidates: JobCandidate[][] = requests.map(({ order, sourceStoreIds, creator }) =>
      sourceStoreIds.map((sourceStoreId) => {
        const id = newId('syncJob');
        return {
          id,
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
          events: [createdJobEvent(initial, order, sourceStoreId, id, now)],
        };
      }),
    );
    const found = new Map((await this.jobs.insertNew(trx, candidates.flat(), initial, now, lockKeys)).map((row) => [row.candidate, row]));
    // The jobs not inserted exist: before this delivery (a redelivery), committed by a concurrent one
    // while this insert waited on the unique index, or inserted by another request of this group.
    // Read after the insert, they are all seen: committed by now, or this transaction's own.
    const missing = candidates.flat().filter((candidate) => !found.has(candidate.id));
    if (missing.length > 0) {
      const late = await this.jobs.findByOrderKeys(trx, missing);
      for (const candidate of missing) {
        const job = late.find((row) => row.external_order_id === candidate.external_order_id && row.source_store_id === candidate.source_store_id);
        if (job) found.set(candidate.id, { candidate: candidate.id, id: job.id, queueMessageId: null, created: false, eventsWritten: false });
      }
    }
    const jobs = candidates.map((forRequest) =>
      forRequest.map((candidate) => {
        const job = found.get(candidate.id);
        if (!job) throw new Error(`no sync job for order ${candidate.external_order_id} and source store ${candidate.source_store_id}`);
        return job;
      }),
    );
    return { jobs, events: new Map(candidates.flat().map((candidate) => [candidate.id, candidate.events])) };
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
    return this.deps.timelines.find([job.id]);
  }

  private async fulfillmentsOf(syncJobId: string): Promise<Omit<JobWithFulfillments, 'job'>> {
    const fulfillments = await this.fulfillments.listForJob(syncJobId);
    const fulfillmentAttempts = new Map<string, AttemptEntry[]>(fulfillments.map((fulfillment) => [fulfillment.id, []]));
    for (const entry of await this.deps.timelines.find([...fulfillmentAttempts.keys()])) fulfillmentAttempts.get(entry.rowId)?.push(entry);
    return { fulfillments, fulfillmentAttempts, cancellations: await this.cancellations.viewsOfJob(syncJobId) };
  }

  /**
   * GET /v1/sync_jobs. `external_order_id` names an order as POST reads it: on platform_a and
   * platform_b `01001` is order 1001 (its jobs are keyed `1001`), on a custom storefront `01001`
   * is its own order. Only an id written with leading zeros reads differently on the two, so only
   * then are the owner's custom storefronts looked up.
   */
  async list(principal: Principal, filters: JobFilters): Promise<Page<SyncJob>> {
    const { external_order_id: given, ...rest } = filters;
    if (given === undefined) return this.jobs.list(principal.userId, rest);
    const numeric = canonicalOrderId('platform_a', given);
    const orderId: OrderIdMatch =
      numeric === given
        ? { asGiven: given, numeric, customStorefronts: [] }
        : { asGiven: given, numeric, customStorefronts: await this.storefronts.idsOnPlatform(principal.userId, 'custom') };
    return this.jobs.list(principal.userId, rest, orderId);
  }

  /**
   * Manual retry of a failed or dead job. The new queue message id makes any older message for
   * the job (a scheduled automatic retry) stale, so it can no longer move the job. The write is
   * conditional on the version read, like a worker's; a retry that lost the race to another change
   * reads the job again. So of concurrent retries one revives the job and every other then finds it
   * pending: 400 sync_job_not_retryable, the refusal the contract declares (it used to be a 409).
   */
  async retry(principal: Principal, id: string): Promise<JobWithFulfillments> {
    return retryByHand(this.deps, syncJobKind, {
      find: () => this.jobs.findOwned(principal.userId, id),
      audit: (job) => jobAuditRecord(job, 'sync_job.retried', actorOf(principal), { attempts: job.attempts, ...auditContext(principal) }),
      repository: this.jobs,
      prepare: (job) => this.fulfillmentsOf(job.id),
      written: async (trx, job, fulfillments) => {
        await this.deps.outbox.append(trx, await syncJobEventsIn(trx, [{ type: 'sync_job.retried', job, fulfillments }]));
        return { job, ...fulfillments };
      },
      names: { many: 'sync jobs', one: 'job' },
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
      await this.deps.queue.insertIn(trx, syncJobKind.queue, jobs.map((job) => ({ id: job.queueMessageId!, message: syncJobKind.message(job.id) })));
      // Failed and dead jobs have no fulfillments (see syncJobEvent); they may have cancellations.
      await this.deps.outbox.append(trx, await syncJobEventsIn(trx, jobs.map((job) => ({ type: 'sync_job.retried' as const, job }))));
      return jobs;
    });
    this.deps.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, retried.length);
    return { retriedIds: retried.map((job) => job.id), hasMore: candidates.length > limit };
  }
}

/** `sync_job.created` of a job the routing is about to insert, as the job's GET shows it then: just created, no fulfillments. */
function createdJobEvent(initial: SyncJob, order: JobsRequest['order'], sourceStoreId: string, id: string, now: Date): NewEvent {
  const created = { ...initial, id, ownerId: order.ownerId, resellerStoreId: order.resellerStoreId, sourceStoreId, externalOrderId: order.externalOrderId, sourceOrderId: null, createdAt: now, updatedAt: now };
  return syncJobEvent('sync_job.created', created as SyncJob);
}
