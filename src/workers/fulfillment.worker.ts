import type { AppContext } from '../context.ts';
import { Fulfillment } from '../fulfillments/entity.ts';
import { transitionFulfillment } from '../fulfillments/lifecycle.ts';
import { fulfillmentAuditRecord } from '../fulfillments/service.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SyncJob } from '../sync-jobs/entity.ts';
import { AttemptWorker } from './attempt-worker.ts';
import { JobFailure } from './failure.ts';
import { connectionOf } from './store-connection.ts';

/** Pushes a supplier's tracking to the reseller order, notifying the customer. */
export function fulfillmentWorker(ctx: AppContext): AttemptWorker<Fulfillment, 'resellerFulfillmentId', 'fulfillment'> {
  async function jobOf(fulfillment: Fulfillment): Promise<SyncJob> {
    const job = await ctx.orm.em.fork().findOne(SyncJob, { id: fulfillment.syncJobId });
    if (!job) throw new JobFailure('the sync job no longer exists');
    return job;
  }

  /** Keyed by our fulfillment id, so a retry after a crash cannot add the tracking twice. */
  async function propagate({ row: fulfillment }: { row: Fulfillment }): Promise<string> {
    const job = await jobOf(fulfillment);
    const reseller = await ctx.orm.em.fork().findOne(ResellerStore, { id: job.resellerStoreId });
    if (!reseller || reseller.deletedAt) throw new JobFailure('the reseller store was deleted');
    const created = await ctx.platforms[reseller.platform].createFulfillment(
      connectionOf(ctx, reseller),
      job.externalOrderId,
      fulfillment.tracking,
      `fulfillment:${fulfillment.id}`,
    );
    return created.id;
  }

  return new AttemptWorker(ctx, {
    load: async (ids) => (await ctx.orm.em.fork().find(Fulfillment, { id: { $in: ids } })).map((row) => ({ row })),
    table: 'fulfillments',
    resultColumn: 'reseller_fulfillment_id',
    name: 'fulfillment',
    resultKey: 'resellerFulfillmentId',
    logKey: 'fulfillment_id',
    queue: 'fulfillment',
    message: (fulfillment) => ({ fulfillmentId: fulfillment.id }),
    transition: transitionFulfillment,
    perform: propagate,
    audit: (fulfillment) =>
      fulfillmentAuditRecord(fulfillment, `fulfillment.${fulfillment.status}`, { attempts: fulfillment.attempts, errorMessage: fulfillment.errorMessage }),
  });
}
