import { ApiKey } from './api-keys/entity.ts';
import { AuditEntry } from './audit-log/entity.ts';
import { EventRecord } from './events/entity.ts';
import { RefreshToken } from './auth/entity.ts';
import { Fulfillment } from './fulfillments/entity.ts';
import { RoutedOrder } from './orders/entity.ts';
import { ReconciliationRun, ReconciliationWatermark } from './reconciliation/entity.ts';
import { HeldFulfillment } from './fulfillments/held.entity.ts';
import { ResellerStore } from './reseller-stores/entity.ts';
import { StoreStatusCount } from './reseller-stores/status-count.entity.ts';
import { SourceStore, SourceStoreDomain } from './source-stores/entity.ts';
import { StorePacing } from './pacing/entity.ts';
import { RateLimitCounter } from './rate-limits/entity.ts';
import { SyncJob } from './sync-jobs/entity.ts';
import { AttemptEntry } from './attempts/entity.ts';
import { User } from './users/entity.ts';
import { Cancellation, OrderCancellation } from './cancellations/entity.ts';
import { HeldSupplierCancellation } from './cancellations/held.entity.ts';
import { WebhookDelivery, WebhookEndpoint } from './webhook-endpoints/entity.ts';
import { Divergence, WatchPass, WatchWatermark } from './divergence-watch/entity.ts';

export const entities = [
  User, RefreshToken, ApiKey, ResellerStore, SourceStore, SyncJob, Fulfillment, HeldFulfillment, AuditEntry, RoutedOrder, ReconciliationRun, ReconciliationWatermark,
  StoreStatusCount, AttemptEntry, EventRecord, WebhookEndpoint, WebhookDelivery, SourceStoreDomain, StorePacing, RateLimitCounter,
  Divergence, WatchPass, WatchWatermark,
  Cancellation, OrderCancellation, HeldSupplierCancellation,
];
