import { ApiKeyRepository } from './api-keys/repository.ts';
import { writeAudit } from './audit-log/repository.ts';
import { StoreLookupCache } from './db/lookup-cache.ts';
import { sqlOf } from './db/sql.ts';
import { SharedCounters } from './rate-limits/repository.ts';
import { ApiKeyService } from './api-keys/service.ts';
import { AuditLogService } from './audit-log/service.ts';
import { AuthRepository } from './auth/repository.ts';
import { AuthService } from './auth/service.ts';
import type { AppContext } from './context.ts';
import { EventRepository } from './events/repository.ts';
import { EventService } from './events/service.ts';
import { FulfillmentService } from './fulfillments/service.ts';
import { OrderRouter } from './orders/routing.ts';
import { ReconciliationRepository } from './reconciliation/repository.ts';
import { ReconciliationRunner } from './reconciliation/runner.ts';
import { ReconciliationService } from './reconciliation/service.ts';
import { ResellerStoreRepository } from './reseller-stores/repository.ts';
import { ResellerStoreService } from './reseller-stores/service.ts';
import { SourceStoreService } from './source-stores/service.ts';
import { SyncJobService } from './sync-jobs/service.ts';
import { SyncJobRepository } from './sync-jobs/repository.ts';
import { FulfillmentRepository } from './fulfillments/repository.ts';
import { SourceStoreRepository } from './source-stores/repository.ts';
import { WebhookEndpointService } from './webhook-endpoints/service.ts';
import { WebhookService } from './webhooks/service.ts';
import type { WatchRepairs } from './divergence-watch/repairs.ts';
import { DivergenceRepository, raiseDivergence, WatchRepository } from './divergence-watch/repository.ts';
import { FULFILLMENT_RECORDED, SETTLED_STEPS } from './workers/kinds.ts';
import { WatchRunner } from './divergence-watch/runner.ts';
import { DivergenceService } from './divergence-watch/service.ts';
import { CancellationService } from './cancellations/service.ts';
import { CancellationRepository } from './cancellations/repository.ts';

export type Services = ReturnType<typeof createServices>;

export function createServices(ctx: AppContext) {
  // Its to-do list entries (too_late, supplier_cancelled) are written by the divergence list's repository, in its transactions.
  const cancellations = new CancellationService(ctx, new CancellationRepository(ctx.orm), { raise: (trx, entry) => raiseDivergence(trx, entry) });
  const resellerStoreRepository = new ResellerStoreRepository(ctx.orm);
  const divergenceRepository = new DivergenceRepository(ctx.orm);
  const resellerStores = new ResellerStoreService(resellerStoreRepository, ctx, divergenceRepository, cancellations);
  const sourceStoreRepository = new SourceStoreRepository(ctx.orm);
  const sourceStores = new SourceStoreService(sourceStoreRepository, ctx, resellerStores);
  // Repositories one feature reads of another's, through the reading feature's own port.
  const syncJobRepository = new SyncJobRepository(ctx.orm);
  const syncJobs = new SyncJobService(ctx, sourceStores, new FulfillmentRepository(ctx.orm), cancellations, SETTLED_STEPS.sync_job ?? []);
  const fulfillments = new FulfillmentService(ctx, syncJobRepository, resellerStoreRepository, FULFILLMENT_RECORDED);
  // Routing matches orders against the source stores the order webhook caches: built before it, handed its look-up.
  let webhooks: WebhookService | undefined;
  const routing = new OrderRouter(ctx, syncJobs, (resellerStoreId) => webhooks!.activeSourcesOf(resellerStoreId), cancellations);
  webhooks = new WebhookService(ctx, {
    routing,
    cancellations,
    fulfillments,
    syncJobs: syncJobRepository,
    resellerStores: resellerStoreRepository,
    sourceStores: sourceStoreRepository,
    stores: new StoreLookupCache(ctx.config.webhookStoreCacheTtlMs, new Set(['ResellerStore', 'SourceStore'])).attachTo(ctx.orm),
    counters: new SharedCounters(sqlOf(ctx.orm)),
    audit: (record) => writeAudit(ctx.orm, record),
  });
  const reconciliationRepository = new ReconciliationRepository(ctx.orm, ctx.queue);
  const watchRepository = new WatchRepository(ctx.orm, ctx.queue);
  /**
   * What the divergence watch does about the cancellations it finds (src/divergence-watch/repairs.ts):
   * exactly what their webhooks do. A supplier order listed cancelled is the supplier's own
   * cancellation; a routed storefront order listed cancelled is its orders/cancelled, through the
   * order module, under one key per order so later passes that list it again change nothing.
   */
  const watchRepairs: WatchRepairs = {
    supplierCancelled: async (job, found) => {
      if (!job.sourceOrderId) return false;
      const via = { source: 'watch', watchPassId: found.watchPassId };
      const result = await cancellations.recordSupplierCancellation({ sourceStoreIds: [job.sourceStoreId], sourceOrderId: job.sourceOrderId, reason: found.reason, at: found.listedAt, via });
      return result?.recorded ?? false;
    },
    storefrontCancelled: async (store, externalOrderId, watchPassId) => {
      const signal = { externalOrderId, scope: 'order' as const, lines: [], dedupeKey: `watch:${externalOrderId}` };
      return (await routing.cancel(store, signal, { source: 'watch', watchPassId })).recorded;
    },
  };
  return {
    auth: new AuthService(new AuthRepository(ctx.orm), ctx.tokens),
    apiKeys: new ApiKeyService(new ApiKeyRepository(ctx.orm)),
    resellerStores,
    sourceStores,
    syncJobs,
    fulfillments,
    /** Routing an order (src/orders/routing.ts), through its port. */
    routing,
    /** Cancellations (src/cancellations/): the storefront's arrive through `routing.cancel`, the supplier's through `recordSupplierCancellation`. */
    cancellations,
    webhooks,
    reconciliations: new ReconciliationService(ctx, resellerStores, reconciliationRepository),
    /** Carries out queued reconciliation runs (workers). */
    reconciliationRunner: new ReconciliationRunner(ctx, reconciliationRepository, routing),
    /** The reseller's to-do list (divergences) and the scheduling of divergence-watch passes. */
    divergences: new DivergenceService(ctx, resellerStores, divergenceRepository, watchRepository),
    /** Carries out queued divergence-watch passes (workers). */
    watchRunner: new WatchRunner(ctx, watchRepository, fulfillments, routing, watchRepairs),
    auditLog: new AuditLogService(ctx),
    events: new EventService(new EventRepository(ctx.orm)),
    webhookEndpoints: new WebhookEndpointService(ctx),
  };
}
