import { ApiKeyService } from './api-keys/service.ts';
import { AuditLogService } from './audit-log/service.ts';
import { AuthService } from './auth/service.ts';
import type { AppContext } from './context.ts';
import { FulfillmentService } from './fulfillments/service.ts';
import { ResellerStoreService } from './reseller-stores/service.ts';
import { SourceStoreService } from './source-stores/service.ts';
import { SyncJobService } from './sync-jobs/service.ts';
import { WebhookService } from './webhooks/service.ts';

export type Services = ReturnType<typeof createServices>;

export function createServices(ctx: AppContext) {
  const resellerStores = new ResellerStoreService(ctx);
  const sourceStores = new SourceStoreService(ctx, resellerStores);
  const syncJobs = new SyncJobService(ctx, sourceStores);
  const fulfillments = new FulfillmentService(ctx);
  return {
    auth: new AuthService(ctx),
    apiKeys: new ApiKeyService(ctx),
    resellerStores,
    sourceStores,
    syncJobs,
    fulfillments,
    webhooks: new WebhookService(ctx, syncJobs, fulfillments),
    auditLog: new AuditLogService(ctx),
  };
}
