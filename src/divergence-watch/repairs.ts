/**
 * What the watch does about the cancellations it finds, behind a small port (`WatchRepairs`): the
 * cancellation feature (src/cancellations/, issue 23) provides `recordSupplierCancellation(report)`
 * and the storefront's `cancelOrder(signal)`, and is to be wired in by the composition root
 * (src/services.ts, `watchRepairs`) in place of the placeholder below, which only records what was
 * found. The watch calls the port outside any transaction of its own, once per order and pass (a
 * later pass may call it again for the same order: each method must be idempotent and say whether
 * it recorded anything new).
 */
import { insertAudit, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import type { Trx } from '../db/sql.ts';
import { raiseDivergence } from './repository.ts';

export interface SupplierCancellationFound {
  /** The platform's reason (platform_a `cancel_reason`, platform_b's status), if it gives one. */
  reason: string | null;
  /** When the supplier's list shows the order last changed. */
  listedAt: Date;
  watchPassId: string;
}

export interface WatchRepairs {
  /**
   * A supplier order the service placed is listed cancelled: record it as the supplier's own
   * cancellation webhook would. Returns whether anything new was recorded (a repair).
   */
  supplierCancelled(job: SyncJob, found: SupplierCancellationFound): Promise<boolean>;
  /**
   * A routed storefront order is listed cancelled: treat it as its orders/cancelled webhook.
   * Returns whether anything new was recorded (a repair).
   */
  storefrontCancelled(store: ResellerStore, externalOrderId: string, watchPassId: string): Promise<boolean>;
}

/** The statements the default repairs need. */
export interface RepairsStore {
  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T>;
  /** Whether the store's audit log already has this action on this resource. */
  audited(trx: Trx, ownerId: string, action: string, resourceId: string): Promise<boolean>;
}

/**
 * Until the cancellation feature is wired in: a supplier cancellation joins the divergence list
 * (`supplier_cancelled`, once per job) with the audit entry `sync_job.supplier_cancelled`; a
 * storefront cancellation is only audited (`order.cancellation_found`, once per order), nothing
 * reaches the suppliers yet.
 */
export function recordingOnlyRepairs(store: RepairsStore): WatchRepairs {
  return {
    supplierCancelled: (job, found) =>
      store.transaction(async (trx) => {
        const raised = await raiseDivergence(trx, {
          ownerId: job.ownerId,
          resellerStoreId: job.resellerStoreId,
          syncJobId: job.id,
          type: 'supplier_cancelled',
          detail: found.reason ? `Cancelled by the supplier (${found.reason}).` : 'Cancelled by the supplier.',
        });
        if (raised === null) return false;
        await insertAudit(trx, [
          {
            ownerId: job.ownerId,
            resellerStoreId: job.resellerStoreId,
            action: 'sync_job.supplier_cancelled',
            resourceType: 'sync_job',
            resourceId: job.id,
            actorId: SYSTEM_ACTOR,
            metadata: { via: 'divergence_watch', watchPassId: found.watchPassId, reason: found.reason, sourceOrderId: job.sourceOrderId ?? null },
          },
        ]);
        return true;
      }),
    storefrontCancelled: (reseller, externalOrderId, watchPassId) =>
      store.transaction(async (trx) => {
        if (await store.audited(trx, reseller.ownerId, 'order.cancellation_found', externalOrderId)) return false;
        await insertAudit(trx, [
          {
            ownerId: reseller.ownerId,
            resellerStoreId: reseller.id,
            action: 'order.cancellation_found',
            resourceType: 'order',
            resourceId: externalOrderId,
            actorId: SYSTEM_ACTOR,
            metadata: { via: 'divergence_watch', watchPassId, forwarded: false },
          },
        ]);
        return true;
      }),
  };
}
