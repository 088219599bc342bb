import { ApiKeyService } from './api-keys/service.ts';
import { AuditLogService } from './audit-log/service.ts';
import { AuthService } from './auth/service.ts';
import type { AppContext } from './context.ts';
import { EventService } from './events/service.ts';
import { FulfillmentService } from './fulfillments/service.ts';
import { RoutedOrderRepository } from './orders/repository.ts';
import { ReconciliationRepository } from './reconciliation/repository.ts';
import { ReconciliationRunner } from './reconciliation/runner.ts';
import { ReconciliationService } from './reconciliation/service.ts';
import { ResellerStoreService } from './reseller-stores/service.ts';
import { SourceStoreService } from './source-stores/service.ts';
import { SyncJobService } from './sync-jobs/service.ts';
import { WebhookEndpointService } from './webhook-endpoints/service.ts';
import { WebhookService } from './webhooks/service.ts';
import { CancellationService } from './cancellations/service.ts';

export type Services = ReturnType<typeof createServices>;

export function createServices(ctx: AppContext) {
  const resellerStores = new ResellerStoreService(ctx);
  const sourceStores = new SourceStoreService(ctx, resellerStores);
  const syncJobs = new SyncJobService(ctx, sourceStores);
  const fulfillments = new FulfillmentService(ctx);
  const cancellations = new CancellationService(ctx);
  const webhooks = new WebhookService(ctx, syncJobs, fulfillments, cancellations);
  const reconciliationRepository = new ReconciliationRepository(ctx.orm, ctx.queue);
  const routedOrders = new RoutedOrderRepository(ctx.orm);
  return {
    auth: new AuthService(ctx),
    apiKeys: new ApiKeyService(ctx),
    resellerStores,
    sourceStores,
    syncJobs,
    fulfillments,
    cancellations,
    webhooks,
    reconciliations: new ReconciliationService(ctx, resellerStores, reconciliationRepository),
    /** Carries out queued reconciliation runs (workers). */
    reconciliationRunner: new ReconciliationRunner(ctx, reconciliationRepository, {
      routedAmong: (resellerStoreId, externalOrderIds) => routedOrders.routedAmong(resellerStoreId, externalOrderIds),
      route: (store, order, reconciliationId) => webhooks.routeOrder(store, order, { source: 'reconciliation', reconciliationId }),
    }),
    auditLog: new AuditLogService(ctx),
    events: new EventService(ctx),
    webhookEndpoints: new WebhookEndpointService(ctx),
  };
}
