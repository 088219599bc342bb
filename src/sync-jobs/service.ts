import { OptimisticLockError, type EntityManager } from '@mikro-orm/postgresql';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { INSERT_AUDIT_ENTRIES, recordAudit, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/service.ts';
import { sql, type Transaction } from 'kysely';
import type { AppContext } from '../context.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { sqlOf } from '../db/sql.ts';
import { Fulfillment } from '../fulfillments/entity.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { newMessageId } from '../queue/queue.ts';
import type { SourceStoreService } from '../source-stores/service.ts';
import { AppError, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { SyncJob } from './entity.ts';
import { initialProjection, transitionJob } from './lifecycle.ts';

/** A reseller order to route: what every job created for it shares. */
export interface OrderToRoute {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  /** The order as the webhook delivered it; null makes the worker read it from the platform. */
  order: ResellerOrder | null;
}

export interface JobFilters extends PageQuery {
  status?: SyncJob['status'] | undefined;
  reseller_store_id?: string | undefined;
  source_store_id?: string | undefined;
  external_order_id?: string | undefined;
}

export interface JobWithFulfillments {
  job: SyncJob;
  fulfillments: Fulfillment[];
}

/** Who caused a job's creation, for its audit entry. */
export interface JobCreator {
  actorId: string;
  metadata: Record<string, unknown>;
}

export class SyncJobService {
  /** Orders arriving while routing transactions are in flight are routed together in the next (`createJobs`). */
  private readonly routing = new GroupCommit((requests: RoutingRequest[]) => this.routeOrders(requests), { maxItems: 64, maxInFlight: 4 });

  constructor(
    private readonly ctx: AppContext,
    private readonly sourceStores: SourceStoreService,
  ) {}

  private get em(): EntityManager {
    return this.ctx.orm.em;
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
    const jobs = await this.routing.submit({ order, sourceStoreIds, creator, onceForOrder });
    this.ctx.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' }, jobs.filter((job) => job.created).length);
    return jobs;
  }

  private routeOrders(requests: RoutingRequest[]): Promise<RoutedJob[][]> {
    return sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        const routed = await insertJobs(trx, requests);
        const created = routed.flat().filter((job) => job.created);
        await this.ctx.queue.insertIn(trx, 'syncJob', created.map((job) => ({ id: job.queueMessageId!, message: { syncJobId: job.id } })));
        // Advisory locks in a fixed order, so two groups never wait on each other's (the jobs are inserted sorted too).
        const once = requests.filter((request) => request.onceForOrder).sort((a, b) => orderKey(a.order).localeCompare(orderKey(b.order)));
        for (const request of once) await recordOncePerOrder(trx, request.order, request.onceForOrder!);
        return routed.map((jobs) => jobs.map(({ id, created }) => ({ id, created })));
      });
  }

  async get(principal: Principal, id: string): Promise<JobWithFulfillments> {
    const job = await this.em.findOne(SyncJob, { id, ownerId: principal.userId });
    if (!job) throw notFound();
    return { job, fulfillments: await this.fulfillmentsOf(job.id) };
  }

  list(principal: Principal, filters: JobFilters): Promise<Page<SyncJob>> {
    return findPage(
      this.em,
      SyncJob,
      {
        ownerId: principal.userId,
        ...(filters.status !== undefined && { status: filters.status }),
        ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
        ...(filters.source_store_id !== undefined && { sourceStoreId: filters.source_store_id }),
        ...(filters.external_order_id !== undefined && { externalOrderId: filters.external_order_id }),
      },
      filters,
    );
  }

  /**
   * Manual retry of a failed or dead job. The new queue message id makes any older message for
   * the job (a scheduled automatic retry) stale, so it can no longer move the job.
   */
  async retry(principal: Principal, id: string): Promise<JobWithFulfillments> {
    try {
      const job = await this.em.transactional(async (em) => {
        const job = await em.findOne(SyncJob, { id, ownerId: principal.userId });
        if (!job) throw notFound();
        const now = new Date();
        if (!transitionJob(job, { type: 'RETRY', at: now.toISOString() }, now)) {
          throw new AppError('sync_job_not_retryable', {
            message: `Only failed or dead sync jobs can be retried; this one is ${job.status}.`,
            details: { status: job.status },
          });
        }
        await this.schedule(em, job);
        this.audit(em, job, 'sync_job.retried', actorOf(principal), { attempts: job.attempts, ...auditContext(principal) });
        return job;
      });
      this.ctx.metrics.attemptTransitions.inc({ kind: 'sync_job', status: 'pending' });
      return { job, fulfillments: await this.fulfillmentsOf(job.id) };
    } catch (error) {
      if (error instanceof OptimisticLockError) {
        throw new AppError('conflict', { message: 'The job changed while it was being retried; try again.', details: { reason: 'concurrent_update' } });
      }
      throw error;
    }
  }

  /** Gives the job a fresh queue message, to run now or after `delayMs`. */
  async schedule(em: EntityManager, job: SyncJob, delayMs = 0): Promise<void> {
    job.queueMessageId = await this.ctx.queue.enqueue(em, 'syncJob', { syncJobId: job.id }, delayMs);
  }

  audit(em: EntityManager, job: SyncJob, action: string, actorId = SYSTEM_ACTOR, metadata: Record<string, unknown> = {}): void {
    recordAudit(em, jobAuditRecord(job, action, actorId, metadata));
  }

  private fulfillmentsOf(syncJobId: string): Promise<Fulfillment[]> {
    return this.em.find(Fulfillment, { syncJobId }, { orderBy: { id: 'asc' } });
  }
}

/** A job's audit entry: every one names the order and the source store. */
export function jobAuditRecord(job: SyncJob, action: string, actorId = SYSTEM_ACTOR, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: job.ownerId,
    resellerStoreId: job.resellerStoreId,
    action,
    resourceType: 'sync_job',
    resourceId: job.id,
    actorId,
    metadata: { externalOrderId: job.externalOrderId, sourceStoreId: job.sourceStoreId, ...metadata },
  };
}

export interface RoutedJob {
  id: string;
  created: boolean;
}

interface RoutingRequest {
  order: OrderToRoute;
  sourceStoreIds: string[];
  creator: JobCreator;
  onceForOrder: AuditRecord | undefined;
}

interface InsertedJob extends RoutedJob {
  candidate: string;
  queueMessageId: string | null;
}

/**
 * Inserted in this order, two groups routing the same orders (a redelivery) wait for each other's
 * index entries in the same sequence, instead of each holding one the other needs (a deadlock).
 */
const byJobKey = (a: { external_order_id: string; source_store_id: string }, b: typeof a) =>
  a.external_order_id.localeCompare(b.external_order_id) || a.source_store_id.localeCompare(b.source_store_id);

const orderKey = (order: OrderToRoute) => `order:${order.resellerStoreId}:${order.externalOrderId}`;

/**
 * One statement for every request: insert the jobs that do not exist yet with their audit entries,
 * and find the ones that do. Returns, per request, its jobs in the order of its source stores.
 */
async function insertJobs(trx: Transaction<unknown>, requests: RoutingRequest[]): Promise<InsertedJob[][]> {
  const now = new Date();
  const initial = initialProjection(now);
  const candidates = requests.map(({ order, sourceStoreIds, creator }) =>
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
  const { rows } = await sql<InsertedJob>`
    with candidate as (
      select * from jsonb_to_recordset(${JSON.stringify(candidates.flat().sort(byJobKey))}::jsonb) as c(
        id text, owner_id text, reseller_store_id text, source_store_id text, external_order_id text, origin text,
        "order" jsonb, queue_message_id text, audit_id text, audit_metadata jsonb, actor_id text)
    ), inserted as (
      insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts,
        machine_state, "order", queue_message_id, version, created_at, updated_at)
      select id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, ${initial.status}, ${initial.attempts},
        ${JSON.stringify(initial.machineState)}::jsonb, "order", queue_message_id, 1, ${now}, ${now}
      from candidate
      on conflict (external_order_id, source_store_id) do nothing
      returning id, queue_message_id
    ), audited as (
      ${INSERT_AUDIT_ENTRIES}
      select c.audit_id, c.owner_id, c.reseller_store_id, 'sync_job.created', 'sync_job', i.id, c.audit_metadata, c.actor_id, ${now}
      from inserted i join candidate c on c.id = i.id
    )
    select id as candidate, id, queue_message_id as "queueMessageId", true as created from inserted
    union all
    select c.id, j.id, null, false
    from candidate c join sync_jobs j on j.external_order_id = c.external_order_id and j.source_store_id = c.source_store_id
  `.execute(trx);
  const found = new Map(rows.map((row) => [row.candidate, row]));
  // The statement's snapshot predates it: a job that a concurrent delivery committed while this
  // insert waited on the unique index, or that another request of this group inserted, was neither
  // inserted for its candidate nor seen. Read those again: committed now, or this transaction's own.
  const missing = candidates.flat().filter((candidate) => !found.has(candidate.id));
  if (missing.length > 0) {
    const { rows: late } = await sql<{ id: string; external_order_id: string; source_store_id: string }>`
      select id, external_order_id, source_store_id from sync_jobs
      where (external_order_id, source_store_id) in (
        select * from unnest(${missing.map((c) => c.external_order_id)}::text[], ${missing.map((c) => c.source_store_id)}::text[]))
    `.execute(trx);
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

/** The audit entry, unless the order already has one for this action. */
async function recordOncePerOrder(trx: Transaction<unknown>, order: OrderToRoute, record: AuditRecord): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${orderKey(order)}))`.execute(trx);
  await sql`
    ${INSERT_AUDIT_ENTRIES}
    select ${newId('auditEntry')}, ${record.ownerId}, ${record.resellerStoreId}, ${record.action}, ${record.resourceType},
      ${record.resourceId}, ${JSON.stringify(record.metadata ?? {})}::jsonb, ${record.actorId}, ${new Date()}
    where not exists (
      select 1 from audit_entries
      where resource_id = ${record.resourceId} and action = ${record.action} and reseller_store_id = ${record.resellerStoreId}
    )
  `.execute(trx);
}
