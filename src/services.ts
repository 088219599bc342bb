import type { Logger } from 'pino';
import { ApiKeyRepository } from './api-keys/repository.ts';
import { findAttempts } from './attempts/repository.ts';
import { AuditLogRepository } from './audit-log/repository.ts';
import type { AccessTokens } from './auth/tokens.ts';
import type { Config } from './config/index.ts';
import type { Orm } from './db/orm.ts';
import type { Outbox } from './events/outbox.ts';
import type { Metrics } from './metrics/index.ts';
import type { SharedPacer } from './pacing/pacer.ts';
import type { PlatformAdapters } from './platforms/types.ts';
import type { Queue } from './queue/queue.ts';
import type { SecretBox } from './shared/secrets.ts';
import { RoutedOrderRepository } from './orders/repository.ts';
import { SourceSecrets } from './webhooks/source-secrets.ts';
import { writeAudit } from './audit-log/repository.ts';
import { StoreLookupCache } from './db/lookup-cache.ts';
import { sqlOf } from './db/sql.ts';
import { SharedCounters } from './rate-limits/repository.ts';
import { ApiKeyService } from './api-keys/service.ts';
import { AuditLogService } from './audit-log/service.ts';
import { AuthRepository } from './auth/repository.ts';
import { AuthService } from './auth/service.ts';
import { EventRepository } from './events/repository.ts';
import { EventService } from './events/service.ts';
import { FulfillmentService } from './fulfillments/service.ts';
import { UnplacedShipments } from './fulfillments/unplaced.ts';
import { OrderRouter } from './orders/routing.ts';
import { ReconciliationRepository } from './reconciliation/repository.ts';
import { ReconciliationRunner } from './reconciliation/runner.ts';
import { ReconciliationService } from './reconciliation/service.ts';
import { ResellerStoreRepository, storesDueIn } from './reseller-stores/repository.ts';
import { ResellerStoreService } from './reseller-stores/service.ts';
import { SourceStoreService } from './source-stores/service.ts';
import { SyncJobService } from './sync-jobs/service.ts';
import { noJobCanOwn, SyncJobRepository } from './sync-jobs/repository.ts';
import { FulfillmentRepository } from './fulfillments/repository.ts';
import { SourceStoreRepository } from './source-stores/repository.ts';
import { jobsOfSupplierRecords } from './source-stores/former-records.ts';
import { WebhookEndpointService } from './webhook-endpoints/service.ts';
import { WebhookEndpointRepository } from './webhook-endpoints/repository.ts';
import { WebhookService } from './webhooks/service.ts';
import type { WatchRepairs } from './divergence-watch/repairs.ts';
import { DivergenceRepository, WatchRepository } from './divergence-watch/repository.ts';
import { CANCELLATION_DIVERGENCES, FULFILLMENT_RECORDED, SETTLED_STEPS } from './workers/kinds.ts';
import type { FulfillmentRecorded } from './fulfillments/ports.ts';
import { WatchRunner } from './divergence-watch/runner.ts';
import { DivergenceService } from './divergence-watch/service.ts';
import { CancellationService } from './cancellations/service.ts';
import { watchSignalKey } from './cancellations/signal-keys.ts';
import { CancellationRepository, HeldSupplierCancellationRepository } from './cancellations/repository.ts';

export type Services = ReturnType<typeof createServices>;

/**
 * What a process is built on, started once by src/server.ts: the composition (this file,
 * src/server.ts, src/app.ts, src/workers/) takes from it what each service, runner, scheduler and
 * kind uses and hands exactly that over. No feature sees it.
 */
export interface Infrastructure {
  config: Config;
  orm: Orm;
  logger: Logger;
  secrets: SecretBox;
  tokens: AccessTokens;
  platforms: PlatformAdapters;
  /** Every store's turns to be called, shared with every process (src/pacing/). */
  pacer: SharedPacer;
  queue: Queue;
  metrics: Metrics;
  /** Events for integrators, appended in the transaction of the change they report. */
  outbox: Outbox;
}

export function createServices(infrastructure: Infrastructure) {
  const { config, orm, logger, secrets, tokens, platforms, queue, metrics, outbox } = infrastructure;
  /** The retry framework's timelines (table `attempts`), as the features that show them read them. */
  const timelines = { find: (rowIds: string[]) => findAttempts(orm, rowIds) };
  /** The shared counters behind rate limits (the credential endpoints' and the failed-signature limits). */
  const counters = new SharedCounters(sqlOf(orm));
  // Repositories one feature reads of another's, through the reading feature's own port. The jobs'
  // repository writes the manual retries' transitions with what they also write (SETTLED_STEPS).
  const syncJobRepository = new SyncJobRepository(orm, SETTLED_STEPS.sync_job ?? []);
  const sourceStoreRepository = new SourceStoreRepository(orm);
  // Its to-do list entries (too_late, supplier_cancelled) are written by the divergence list's repository, in its transactions;
  // the jobs it cancels and the suppliers' vendor tags are read and written through its ports, by their own features' repositories.
  const cancellations = new CancellationService(
    { jobs: syncJobRepository, vendorTags: sourceStoreRepository, queue, outbox, metrics, timelines, held: new HeldSupplierCancellationRepository(orm, noJobCanOwn), formerRecords: sourceStoreRepository, logger },
    new CancellationRepository(orm),
    CANCELLATION_DIVERGENCES,
  );
  const resellerStoreRepository = new ResellerStoreRepository(orm);
  const divergenceRepository = new DivergenceRepository(orm);
  const resellerStores = new ResellerStoreService(resellerStoreRepository, { config, secrets }, divergenceRepository, cancellations, sourceStoreRepository);
  const sourceStores = new SourceStoreService(sourceStoreRepository, { config, secrets }, resellerStores);
  const fulfillmentRepository = new FulfillmentRepository(orm, noJobCanOwn);
  const syncJobs = new SyncJobService({ jobs: syncJobRepository, timelines, queue, outbox, metrics }, sourceStores, fulfillmentRepository, cancellations, resellerStoreRepository);
  // Every fulfillment recorded, whoever records it, also tells a cancellation it came too late (the supplier shipped anyway).
  const fulfillmentRecorded: FulfillmentRecorded[] = [...FULFILLMENT_RECORDED, (trx, fulfillment) => cancellations.fulfilledAfterCancellationIn(trx, fulfillment.syncJobId)];
  // A shipment of an order no job recorded is checked against the supplier's jobs ended unplaced (the webhook's and the sweep's), and reported through the cancellations.
  const unplaced = new UnplacedShipments({ platforms, secrets, logger }, syncJobRepository, cancellations, sourceStoreRepository);
  const fulfillments = new FulfillmentService(
    { fulfillments: fulfillmentRepository, queue, metrics, logger, platforms, outbox, unplaced, sourceStores: sourceStoreRepository },
    syncJobRepository,
    resellerStoreRepository,
    fulfillmentRecorded,
  );
  // Routing matches orders against the source stores the order webhook caches: built before it, handed its look-up.
  let webhooks: WebhookService | undefined;
  const routing = new OrderRouter({ routedOrders: new RoutedOrderRepository(orm), outbox, metrics }, syncJobs, (resellerStoreId) => webhooks!.activeSourcesOf(resellerStoreId), cancellations);
  webhooks = new WebhookService({
    routing,
    cancellations,
    fulfillments,
    // A supplier's fulfillment or cancellation of an order placed through a record since deleted and
    // created again (same reseller store, owner, platform and domain) finds that order's job.
    syncJobs: jobsOfSupplierRecords(syncJobRepository, sourceStoreRepository),
    resellerStores: resellerStoreRepository,
    sourceStores: sourceStoreRepository,
    stores: new StoreLookupCache(config.webhookStoreCacheTtlMs, new Set(['ResellerStore', 'SourceStore'])).attachTo(orm),
    counters,
    audit: (record) => writeAudit(orm, record),
    sourceSecrets: new SourceSecrets({ metrics, secrets }, sourceStoreRepository),
    secrets,
    platforms,
    metrics,
    logger,
    config,
  });
  const reconciliationRepository = new ReconciliationRepository(orm, queue, storesDueIn);
  const watchRepository = new WatchRepository(orm, queue, storesDueIn);
  /**
   * What the divergence watch does about the cancellations it finds (src/divergence-watch/repairs.ts):
   * exactly what their webhooks do. A supplier order listed cancelled is the supplier's own
   * cancellation; a routed storefront order listed cancelled is its orders/cancelled, through the
   * order module, under one key per order so later passes that list it again change nothing; lines a
   * routed order shows cancelled beyond what its signals account for are recorded and applied once. An
   * order still open at the supplier whose job's cancellation ended `not_placed` gets cancelled.
   */
  const watchRepairs: WatchRepairs = {
    supplierCancelled: async (job, found) => {
      const via = { source: 'watch', watchPassId: found.watchPassId };
      const result = await cancellations.recordSupplierCancellation({ sourceStoreIds: [job.sourceStoreId], sourceOrderId: found.sourceOrderId, syncJob: job, reason: found.reason, at: found.listedAt, via });
      return result?.recorded ?? false;
    },
    supplierLinesCancelled: (job, found) => cancellations.recordShownSupplierLines(job, found),
    storefrontCancelled: async (store, externalOrderId, watchPassId) => {
      const signal = { externalOrderId, scope: 'order' as const, lines: [], dedupeKey: watchSignalKey(externalOrderId) };
      const { recorded, syncJobIds } = await routing.cancel(store, signal, { source: 'watch', watchPassId });
      // A repair only when it cancelled something: after the order's own webhook it is de-duplicated (not recorded).
      return recorded && syncJobIds.length > 0;
    },
    // Lines a routed order shows cancelled beyond the signals recorded for it: their lost webhook, recorded and applied once.
    storefrontLinesCancelled: (store, shown, watchPassId) => cancellations.cancelShownLines(store, shown, watchPassId),
    // The still-open order of a job whose cancellation missed it: recorded on the job and cancelled, as the storefront asked.
    unplacedOrderOpen: (job, found) => cancellations.cancelFoundOrder(job, found),
    voidedOrderFound: (job, found) => cancellations.recordFoundOrderOfVoided(job, found),
  };
  const eventRepository = new EventRepository(orm);
  return {
    auth: new AuthService(new AuthRepository(orm), tokens),
    apiKeys: new ApiKeyService(new ApiKeyRepository(orm)),
    resellerStores,
    sourceStores,
    syncJobs,
    fulfillments,
    /** Routing an order (src/orders/routing.ts), through its port. */
    routing,
    /** Cancellations (src/cancellations/): the storefront's arrive through `routing.cancel`, the supplier's through `recordSupplierCancellation`. */
    cancellations,
    webhooks,
    reconciliations: new ReconciliationService(config, resellerStores, reconciliationRepository),
    /** Carries out queued reconciliation runs (workers). */
    reconciliationRunner: new ReconciliationRunner({ config, logger, metrics, platforms, secrets }, reconciliationRepository, routing, resellerStoreRepository, async (store, externalOrderId, reconciliationId) => {
      // An unrouted order a run lists cancelled: its storefront cancellation, under the watch's key (one per order).
      const signal = { externalOrderId, scope: 'order' as const, lines: [], dedupeKey: watchSignalKey(externalOrderId) };
      await routing.cancel(store, signal, { source: 'reconciliation', reconciliationId });
    }),
    /** The reseller's to-do list (divergences) and the scheduling of divergence-watch passes. */
    divergences: new DivergenceService(config, resellerStores, divergenceRepository, watchRepository),
    /** Carries out queued divergence-watch passes (workers). */
    watchRunner: new WatchRunner({ config, logger, metrics, outbox, platforms, secrets }, watchRepository, fulfillments, routing, watchRepairs, {
      resellerStores: resellerStoreRepository,
      suppliers: sourceStoreRepository,
      jobs: syncJobRepository,
      fulfillments: fulfillmentRepository,
    }),
    auditLog: new AuditLogService(new AuditLogRepository(orm)),
    events: new EventService(eventRepository),
    /** The events' repository, for the worker processes' pruning (src/events/retention.ts). */
    eventRepository,
    webhookEndpoints: new WebhookEndpointService(new WebhookEndpointRepository(orm), { secrets, outbox, queue, config }),
    /** The shared counters behind rate limits (the credential endpoints' limit, src/app.ts). */
    counters,
  };
}
