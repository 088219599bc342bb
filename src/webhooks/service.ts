import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import type { StoreLookupCache } from '../db/lookup-cache.ts';
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import type { Metrics } from '../metrics/index.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { fulfillmentKeys, type FulfillmentKeys } from '../fulfillments/identity.ts';
import type { FulfillmentService } from '../fulfillments/service.ts';
import { PayloadError, PlatformError, type PlatformAdapters } from '../platforms/types.ts';
import { MAX_TRACKING_NUMBERS_PER_FULFILLMENT } from '../../contract/limits.ts';
import { normaliseVendor } from '../pricing/index.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import { AppError, validationFailed } from '../shared/errors.ts';
import { EXTERNAL_ORDER_ID, type ResellerOrder, type SourceFulfillment } from '../orders/types.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import type { OrderCancelling, OrderRouting } from '../orders/port.ts';
import type { RoutableSource } from '../orders/routing.ts';
import type { JobsBySourceOrder, ResellerStoreReads, SourceStoreReads } from './ports.ts';
import { verifySignature } from './signature.ts';
import type { SourceSecrets } from './source-secrets.ts';
import { SignatureBudget } from './signature-budget.ts';
import type { SharedCounters } from '../rate-limits/repository.ts';
import {
  IGNORED,
  readBySenderPlatform,
  receiveStorefrontCancellation,
  receiveSupplierCancellation,
  STOREFRONT_CANCELLATION_TOPICS,
  SUPPLIER_CANCELLATION_TOPICS,
  type WebhookAnswer,
} from '../cancellations/intake.ts';
import type { CancellationService } from '../cancellations/service.ts';

export interface Delivery {
  /** The client's address (X-Forwarded-For's when TRUST_PROXY), for the failed-signature limit. */
  client: string | undefined;
  shopDomain: string | undefined;
  signature: string | undefined;
  topic: string | undefined;
  webhookId: string | undefined;
  rawBody: Buffer;
}


/** What the order and fulfillment webhooks use, built once in the composition root (src/services.ts). */
export interface WebhookCollaborators {
  /** Routing an order (orders/create) and cancelling it (the storefront's cancellation topics): the order module. */
  routing: OrderRouting & OrderCancelling;
  /** The supplier's own cancellation, and a fulfillment that comes after a cancellation (too late). */
  cancellations: Pick<CancellationService, 'recordSupplierCancellation'>;
  fulfillments: FulfillmentService;
  syncJobs: JobsBySourceOrder;
  resellerStores: ResellerStoreReads;
  sourceStores: SourceStoreReads;
  /** The order webhook's store look-ups, reused for WEBHOOK_STORE_CACHE_TTL_MS (src/db/lookup-cache.ts). */
  stores: StoreLookupCache;
  /** The failed-signature counts shared by every process. */
  counters: SharedCounters;
  /** Writes an audit entry on its own (a refused order). */
  audit: (record: AuditRecord) => Promise<void>;
  /** The fulfillment webhook's secrets per supplier domain (src/webhooks/source-secrets.ts). */
  sourceSecrets: SourceSecrets;
  secrets: SecretBox;
  platforms: PlatformAdapters;
  metrics: Metrics;
  logger: Logger;
  config: Pick<Config, 'webhookSignatureFailuresPerMinute'>;
}

export class WebhookService {
  private readonly stores: StoreLookupCache;
  private readonly sourceSecrets: SourceSecrets;
  private readonly counters: SharedCounters;
  private readonly routing: OrderRouting & OrderCancelling;
  private readonly cancellations: WebhookCollaborators['cancellations'];
  private readonly fulfillments: FulfillmentService;
  private readonly syncJobs: JobsBySourceOrder;

  constructor(private readonly deps: WebhookCollaborators) {
    ({ stores: this.stores, counters: this.counters, routing: this.routing, fulfillments: this.fulfillments, syncJobs: this.syncJobs, cancellations: this.cancellations } = deps);
    this.sourceSecrets = deps.sourceSecrets;
  }

  /**
   * A reseller store's active source stores, as routing matches an order's lines to them
   * (src/orders/routing.ts), cached with the store look-ups.
   */
  activeSourcesOf(resellerStoreId: string): Promise<RoutableSource[]> {
    return this.stores.get(`sources:${resellerStoreId}`, () => this.deps.sourceStores.activeOf(resellerStoreId)) as Promise<RoutableSource[]>;
  }

  /** The active reseller store that signed an orders/create delivery, or 401 invalid_signature. */
  async verifyResellerStore(delivery: Delivery): Promise<ResellerStore> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    const found = shopDomain
      ? await this.stores.get(`reseller:${shopDomain}`, async () => {
          const store = await this.deps.resellerStores.findActiveByDomain(shopDomain);
          return store && { store, secret: this.deps.secrets.decrypt(store.webhookSecretEncrypted, store.id) };
        })
      : null;
    if (!found || !delivery.signature || !verifySignature(delivery.rawBody, found.secret, delivery.signature)) throw this.refused('orders');
    return found.store;
  }

  /**
   * The active source stores that signed a fulfillments/create delivery. Several source store
   * records (of different resellers) may share a supplier's domain: the ones whose secret
   * verifies are the senders. Checking a delivery against every secret of a domain that strangers
   * gave many records is the costly part (src/webhooks/source-secrets.ts), so failed signatures are
   * charged to what the delivery claims, its domain from its client, and a client's failing domains
   * are counted too, across processes (src/webhooks/signature-budget.ts): past either limit a
   * delivery none of the domain's proven senders signed gets 429, which a platform retries, without
   * the rest being tried. One domain's failures never refuse another domain's delivery from the
   * same (platform's) address, so one tenant's misconfigured or forged deliveries cannot hold back
   * another tenant's tracking.
   */
  async verifySourceStores(delivery: Delivery): Promise<SourceStore[]> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    if (!shopDomain || !delivery.signature) throw this.refused('fulfillments');
    const budget = new SignatureBudget(this.counters, this.deps.config.webhookSignatureFailuresPerMinute, shopDomain, delivery.client);
    const check = await this.sourceSecrets.check(shopDomain, delivery.rawBody, delivery.signature, (secrets) => budget.mayScan(secrets));
    if (check.verdict === 'signed') return check.senders;
    // A domain no record ever had: nothing can verify it, so it is refused at no cost, and counted as a claim of the client.
    const limited = check.verdict === 'limited' || (!check.domainKnown && !(await budget.mayScan(Number.POSITIVE_INFINITY)));
    if (limited) {
      this.deps.metrics.webhookVerificationFailures.inc({ endpoint: 'fulfillments' });
      throw new AppError('rate_limited', { message: 'Too many deliveries with an invalid signature; retry later.', retryAfterSeconds: budget.retryAfterSeconds });
    }
    await budget.charge();
    throw this.refused('fulfillments');
  }

  /**
   * The active source store the URL names, when its own secret signed the delivery: one HMAC, and
   * nothing any other store or client did counts (no failed-signature budget applies). 401
   * invalid_signature otherwise, the same whether the store is unknown, deleted or not the signer.
   */
  async verifySourceStore(sourceStoreId: string | undefined, delivery: Delivery): Promise<SourceStore> {
    const id = sourceStoreId !== undefined && STORE_ID.test(sourceStoreId) ? sourceStoreId : null;
    const store = id ? await this.deps.sourceStores.findActive(id) : null;
    if (!store || !delivery.signature) throw this.refused('fulfillments');
    const secret = this.deps.secrets.decrypt(store.webhookSecretEncrypted, store.id);
    if (!verifySignature(delivery.rawBody, secret, delivery.signature)) throw this.refused('fulfillments');
    return store;
  }

  private refused(endpoint: 'orders' | 'fulfillments'): AppError {
    this.deps.metrics.webhookVerificationFailures.inc({ endpoint });
    return new AppError('invalid_signature');
  }

  /**
   * A reseller store's delivery, by topic, into the order module (src/orders/port.ts): orders/create
   * is read by the platform's reader and routed; a storefront cancellation (orders/cancelled,
   * refunds/create, orders/updated; read by src/cancellations/intake.ts) cancels the order or some of
   * its lines; any other topic, or one that asks for nothing, is acknowledged as `ignored`.
   */
  async receiveOrder(store: ResellerStore, body: unknown, delivery: Delivery): Promise<WebhookAnswer> {
    const topic = delivery.topic ?? 'orders/create';
    if (STOREFRONT_CANCELLATION_TOPICS.has(topic)) return receiveStorefrontCancellation(this.routing, store, { ...delivery, topic }, body);
    if (topic !== 'orders/create') return IGNORED;
    const order = await this.readOrder(store, body, delivery);
    const routed = await this.routing.route(store, order, { source: 'webhook', webhookId: delivery.webhookId ?? null });
    return { syncJobIds: routed.jobs.map((job) => job.id) };
  }

  /**
   * The verified order, or 400 validation_failed naming the field: the order is refused as a whole
   * (no line of it is routed) and the refusal is audited, so the reseller can see why an order their
   * storefront sent never reached a supplier.
   */
  private async readOrder(store: ResellerStore, body: unknown, delivery: Delivery): Promise<ResellerOrder> {
    try {
      const order = parse(() => this.deps.platforms[store.platform].parseOrderWebhook(body));
      if (!EXTERNAL_ORDER_ID.test(order.externalOrderId)) throw validationFailed('id', 'The order id is not a valid order id.');
      return order;
    } catch (error) {
      if (error instanceof AppError && error.code === 'validation_failed') await this.auditRefusal(store, body, delivery, error);
      throw error;
    }
  }

  private async auditRefusal(store: ResellerStore, body: unknown, delivery: Delivery, error: AppError): Promise<void> {
    const id = (body as { id?: unknown } | null)?.id;
    await this.deps.audit({
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action: 'order.refused',
      resourceType: 'order',
      resourceId: (typeof id === 'string' || typeof id === 'number') && EXTERNAL_ORDER_ID.test(String(id)) ? String(id) : 'unknown',
      actorId: SYSTEM_ACTOR,
      metadata: { reason: error.message, param: error.param ?? null, webhookId: delivery.webhookId ?? null },
    });
  }

  /**
   * Queues the tracking of a supplier's fulfillment for the reseller order, once per fulfillment
   * (src/fulfillments/identity.ts). For an order no job has recorded the answer is 200 at once: the
   * fulfillment is held when a job of the supplier could still turn out to own the order (its
   * answer was lost, or is on its way), and applied once that job completes; otherwise it is the
   * supplier's own sale, and acknowledged so the platform stops resending.
   */
  async receiveFulfillment(senders: SourceStore[], body: unknown, delivery: Delivery): Promise<WebhookAnswer> {
    const topic = delivery.topic ?? 'fulfillments/create';
    if (SUPPLIER_CANCELLATION_TOPICS.has(topic)) return receiveSupplierCancellation(this.cancellations, this.syncJobs, senders, { ...delivery, topic }, body);
    if (topic !== 'fulfillments/create') return IGNORED;
    // Read by each sender's platform: a record whose platform was given wrongly is left out, not the delivery.
    const readings = readBySenderPlatform(senders, (platform) => this.deps.platforms[platform].parseFulfillmentWebhook(body));
    const unread = senders.filter((sender) => !readings.some((reading) => reading.senders.includes(sender)));
    if (unread.length > 0) {
      this.deps.logger.warn(
        { shop_domain: senders[0]!.shopDomain, source_store_ids: unread.map((store) => store.id), platforms: [...new Set(unread.map((store) => store.platform))] },
        "fulfillment webhook not readable by these source stores' platform: left out (is their platform right?)",
      );
    }
    // A fulfillment that ships nothing (platform_a: cancelled, error, failure) brings no tracking to push.
    if (readings.every(({ value }) => value === null)) return IGNORED;
    const syncJobIds: string[] = [];
    for (const { senders: group, value: fulfillment } of readings) {
      if (fulfillment !== null) syncJobIds.push(...(await this.receiveTracking(group, fulfillment, delivery)));
    }
    return { syncJobIds };
  }

  private async receiveFor(job: SyncJob, fulfillment: SourceFulfillment, keys: FulfillmentKeys): Promise<string[]> {
    await this.fulfillments.receive(job, fulfillment.tracking, keys);
    return [job.id];
  }

  /**
   * The job ended unplaced whose order this is after all (`UnplacedShipments.ownerOf`). A read the
   * supplier refuses for now (429, 5xx, no answer) is 503, so the platform delivers again.
   */
  private async unplacedOwner(senders: SourceStore[], sourceOrderId: string, receivedAt: Date) {
    try {
      return await this.fulfillments.unplaced.ownerOf(senders, sourceOrderId, receivedAt, { by: 'fulfillment_webhook' });
    } catch (error) {
      if (error instanceof PlatformError && error.retryable) {
        throw new AppError('unavailable', { message: 'The supplier order could not be read to find its sync job; deliver the webhook again.', retryAfterSeconds: Math.ceil((error.retryAfterMs ?? 5_000) / 1000) });
      }
      throw error;
    }
  }

  private async receiveTracking(senders: SourceStore[], fulfillment: SourceFulfillment, delivery: Delivery): Promise<string[]> {
    checkTrackingBound(fulfillment.tracking.numbers.length);
    const keys = fulfillmentKeys(fulfillment, delivery.webhookId);
    const owner = () => this.syncJobs.findBySourceOrder(senders.map((store) => store.id), fulfillment.sourceOrderId);
    const job = await owner();
    if (job) return this.receiveFor(job, fulfillment, keys);
    // Before holding it for a job in doubt: a job ended unplaced whose order this is after all takes it now
    // (src/fulfillments/unplaced.ts); it is checked before the shipment is held for another job in doubt, which would never claim it.
    const receivedAt = new Date();
    const unplaced = await this.unplacedOwner(senders, fulfillment.sourceOrderId, receivedAt);
    if (unplaced.job) return this.receiveFor(unplaced.job, fulfillment, keys);
    const held = await this.fulfillments.holdUnlessUnowned(senders, fulfillment, keys);
    if (!held) {
      // A job may have recorded this order between the two reads (no longer in doubt, not found before): look again.
      const late = await owner();
      if (late) return this.receiveFor(late, fulfillment, keys);
      await this.fulfillments.unplaced.reportUnattributed(senders, { sourceOrderId: fulfillment.sourceOrderId, trackingNumbers: fulfillment.tracking.numbers, receivedAt }, unplaced.unreadable);
    }
    this.deps.logger.info(
      { shop_domain: senders[0]!.shopDomain, source_order_id: fulfillment.sourceOrderId, held },
      held ? 'fulfillment held until a job records its order' : 'fulfillment of an order the service never placed',
    );
    return [];
  }

}

/** What a store id can look like (src/shared/ids.ts); anything else is not looked up. */
const STORE_ID = /^[A-Za-z0-9_]{1,64}$/;

/** One fulfillment's tracking numbers are bounded: each can cost the reseller store a turn (contract/limits.ts). */
function checkTrackingBound(count: number): void {
  if (count > MAX_TRACKING_NUMBERS_PER_FULFILLMENT) {
    throw validationFailed(
      'tracking_numbers',
      `A fulfillment carries at most ${MAX_TRACKING_NUMBERS_PER_FULFILLMENT} tracking numbers; this one has ${count}.`,
    );
  }
}

function normaliseDomain(domain: string | undefined): string | null {
  const normalised = domain?.trim().toLowerCase();
  return normalised && normalised.length <= 255 ? normalised : null;
}

function parse<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof PayloadError) throw validationFailed(error.path ?? 'body', error.message);
    throw error;
  }
}
