import { sql } from 'kysely';
import type { AppContext } from '../context.ts';
import { sqlOf } from '../db/sql.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { buildSupplierOrder } from '../pricing/index.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { SyncJob } from '../sync-jobs/entity.ts';
import { transitionJob } from '../sync-jobs/lifecycle.ts';
import { jobAuditRecord } from '../sync-jobs/service.ts';
import { AttemptWorker } from './attempt-worker.ts';
import { JobFailure } from './failure.ts';
import { connectionOf } from './store-connection.ts';

/** A job and its source store, unless that store was deleted. */
interface JobWork {
  row: SyncJob;
  source: SourceStore | null;
}

/** Places a sync job's order on its source store. */
export function syncJobWorker(ctx: AppContext): AttemptWorker<SyncJob, 'sourceOrderId', 'syncJob', JobWork> {
  /** One statement for the jobs and their stores; the ORM only maps the rows. */
  async function load(jobIds: string[]): Promise<JobWork[]> {
    const { rows } = await sql<Record<string, unknown>>`
      select j.*, to_jsonb(s) as source_store
      from sync_jobs j left join source_stores s on s.id = j.source_store_id and s.deleted_at is null
      where j.id = any(${jobIds}::text[])
    `.execute(sqlOf(ctx.orm));
    const em = ctx.orm.em.fork();
    return rows.map(({ source_store: source, ...job }) => ({
      row: em.map(SyncJob, job),
      source: source ? em.map(SourceStore, source as Record<string, unknown>) : null,
    }));
  }

  /**
   * The Idempotency-Key is the job's id, not the attempt's: when a worker dies after the platform
   * accepted the order, the next attempt gets the same order back instead of creating a second.
   */
  async function placeOrder({ row: job, source }: JobWork): Promise<string> {
    if (!source) throw new JobFailure('the source store was deleted');
    const order = job.order ?? (await readResellerOrder(job));
    const supplierOrder = buildSupplierOrder(order, source, job.id);
    const placed = await ctx.platforms[source.platform].createOrder(connectionOf(ctx, source), supplierOrder, `sync-job:${job.id}`);
    return placed.id;
  }

  async function readResellerOrder(job: SyncJob): Promise<ResellerOrder> {
    const reseller = await ctx.orm.em.fork().findOne(ResellerStore, { id: job.resellerStoreId });
    if (!reseller || reseller.deletedAt) throw new JobFailure('the reseller store was deleted');
    return ctx.platforms[reseller.platform].getOrder(connectionOf(ctx, reseller), job.externalOrderId);
  }

  return new AttemptWorker(ctx, {
    load,
    table: 'sync_jobs',
    resultColumn: 'source_order_id',
    name: 'sync_job',
    resultKey: 'sourceOrderId',
    logKey: 'job_id',
    queue: 'syncJob',
    message: (job) => ({ syncJobId: job.id }),
    transition: transitionJob,
    perform: placeOrder,
    audit: (job) =>
      jobAuditRecord(job, `sync_job.${job.status}`, undefined, {
        attempts: job.attempts,
        ...(job.status === 'completed' ? { sourceOrderId: job.sourceOrderId } : { errorMessage: job.errorMessage }),
      }),
  });
}
