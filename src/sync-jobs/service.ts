import { OptimisticLockError, type EntityManager } from '@mikro-orm/postgresql';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { recordAudit, SYSTEM_ACTOR } from '../audit-log/service.ts';
import type { AppContext } from '../context.ts';
import { Fulfillment } from '../fulfillments/entity.ts';
import type { ResellerOrder } from '../orders/types.ts';
import type { SourceStoreService } from '../source-stores/service.ts';
import { AppError, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { SyncJob } from './entity.ts';
import { initialProjection, transitionJob } from './lifecycle.ts';

export interface JobRequest {
  ownerId: string;
  resellerStoreId: string;
  sourceStoreId: string;
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
  constructor(
    private readonly ctx: AppContext,
    private readonly sourceStores: SourceStoreService,
  ) {}

  private get em(): EntityManager {
    return this.ctx.orm.em;
  }

  /** POST /v1/sync_jobs: the existing job for the order and source store, or a new one. */
  async createManual(principal: Principal, sourceStoreId: string, externalOrderId: string) {
    const source = await this.sourceStores.findActiveById(principal, sourceStoreId);
    if (!source) throw validationFailed('source_store_id', 'No active source store with this id.');
    const [result] = await this.createJobs(
      { resellerStoreId: source.resellerStoreId, externalOrderId },
      [{ ownerId: source.ownerId, resellerStoreId: source.resellerStoreId, sourceStoreId: source.id, externalOrderId, order: null }],
      { actorId: actorOf(principal), metadata: { origin: 'manual', ...auditContext(principal) } },
    );
    return result!;
  }

  /**
   * Creates the jobs of one reseller order that do not exist yet, each with its queue message and
   * audit entry, in one transaction. Concurrent deliveries of the same order are serialised by an
   * advisory lock on the order, so neither creates a duplicate (the unique index is the backstop).
   */
  async createJobs(
    order: { resellerStoreId: string; externalOrderId: string },
    requests: JobRequest[],
    creator: JobCreator,
    /** Runs in the same transaction, under the order's lock, after the jobs are known. */
    alsoInTransaction?: (em: EntityManager, results: { job: SyncJob; created: boolean }[]) => Promise<void>,
  ): Promise<{ job: SyncJob; created: boolean }[]> {
    const { resellerStoreId, externalOrderId } = order;
    const results = await this.em.transactional(async (em) => {
      await em.execute('select pg_advisory_xact_lock(hashtext(?))', [`order:${resellerStoreId}:${externalOrderId}`]);
      const existing = await em.find(SyncJob, {
        externalOrderId,
        sourceStoreId: { $in: requests.map((request) => request.sourceStoreId) },
      });
      const results: { job: SyncJob; created: boolean }[] = [];
      for (const request of requests) {
        const found = existing.find((job) => job.sourceStoreId === request.sourceStoreId);
        results.push(found ? { job: found, created: false } : { job: await this.insertJob(em, request, creator), created: true });
      }
      await alsoInTransaction?.(em, results);
      return results;
    });
    this.ctx.metrics.transitions.inc({ kind: 'sync_job', status: 'pending' }, results.filter((r) => r.created).length);
    return results;
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
      this.ctx.metrics.transitions.inc({ kind: 'sync_job', status: 'pending' });
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
    recordAudit(em, {
      ownerId: job.ownerId,
      resellerStoreId: job.resellerStoreId,
      action,
      resourceType: 'sync_job',
      resourceId: job.id,
      actorId,
      metadata: { externalOrderId: job.externalOrderId, sourceStoreId: job.sourceStoreId, ...metadata },
    });
  }

  private async insertJob(em: EntityManager, request: JobRequest, creator: JobCreator): Promise<SyncJob> {
    const now = new Date();
    const job = em.create(SyncJob, {
      ...initialProjection(now),
      id: newId('syncJob'),
      ownerId: request.ownerId,
      resellerStoreId: request.resellerStoreId,
      sourceStoreId: request.sourceStoreId,
      externalOrderId: request.externalOrderId,
      origin: request.order ? 'webhook' : 'manual',
      order: request.order,
      queueMessageId: null,
      createdAt: now,
      updatedAt: now,
    } as SyncJob);
    await this.schedule(em, job);
    this.audit(em, job, 'sync_job.created', creator.actorId, creator.metadata);
    return job;
  }

  private fulfillmentsOf(syncJobId: string): Promise<Fulfillment[]> {
    return this.em.find(Fulfillment, { syncJobId }, { orderBy: { id: 'asc' } });
  }
}
