import { ipKeyGenerator } from 'express-rate-limit';
import type { EntityManager, EventSubscriber, FlushEventArgs, TransactionEventArgs } from '@mikro-orm/core';
import { recordAudit, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import type { AppContext } from '../context.ts';
import { fulfillmentKeys } from '../fulfillments/identity.ts';
import type { FulfillmentService } from '../fulfillments/service.ts';
import { PayloadError } from '../platforms/types.ts';
import { normaliseVendor } from '../pricing/index.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { AppError, validationFailed } from '../shared/errors.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { SyncJobRepository } from '../sync-jobs/repository.ts';
import type { RoutedOrder, SyncJobService } from '../sync-jobs/service.ts';
import { verifySignature } from './signature.ts';
import { SourceSecrets } from './source-secrets.ts';
import { SharedCounters } from '../rate-limits/repository.ts';
import { sqlOf } from '../db/sql.ts';
import {
  IGNORED,
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

/** Order ids the service keeps (sync_jobs.external_order_id); an order with another id is refused. */
export const EXTERNAL_ORDER_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** What routes an order: its webhook delivery, or a reconciliation run that listed it. */
export type RoutingVia = { source: 'webhook'; webhookId: string | null } | { source: 'reconciliation'; reconciliationId: string };

/** Entities whose changes empty the store look-up cache. */
const CACHED_ENTITIES = new Set(['ResellerStore', 'SourceStore']);
const CACHE_MAX_ENTRIES = 10_000;

/**
 * The order webhook's store look-ups (a reseller store by shop domain, with its decrypted webhook
 * secret; a reseller store's active source stores), each reused for `ttlMs`: at a steady stream
 * of orders they would otherwise cost two queries and a decryption per delivery. A change to any
 * store made through this process's ORM empties the cache when it is flushed and again when it
 * commits, and nothing is cached while such a change is uncommitted, so this process never acts on
 * a store it changed; a change made by another process (another ROLE=api instance) is seen within
 * `ttlMs`. A domain with no active store is never cached, so a new store is seen at once.
 */
class StoreLookupCache implements EventSubscriber {
  readonly #entries = new Map<string, { value: Promise<unknown>; expiresAt: number }>();
  /** Entity managers that flushed a store change not committed yet. */
  readonly #uncommitted = new Set<EntityManager>();
  #generation = 0;

  constructor(private readonly ttlMs: number) {}

  /** The cached value, or `load()`'s; concurrent misses of one key share a single load. */
  get<T>(key: string, load: () => Promise<T | null>): Promise<T | null> {
    if (!(this.ttlMs > 0)) return load();
    const now = Date.now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value as Promise<T | null>;
    const generation = this.#generation;
    const value = load();
    const entry = { value, expiresAt: now + this.ttlMs };
    if (this.#entries.size >= CACHE_MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(key, entry);
    // Keep only a found value, and only when no store change was flushed while it was read.
    const keep = (found: T | null) => found !== null && generation === this.#generation && this.#uncommitted.size === 0;
    const forget = () => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    };
    value.then((found) => keep(found) || forget(), forget);
    return value;
  }

  onFlush({ em, uow }: FlushEventArgs): void {
    if (!uow.getChangeSets().some((changeSet) => CACHED_ENTITIES.has(changeSet.meta.className))) return;
    this.#uncommitted.add(em);
    this.#clear();
  }

  afterFlush({ em }: FlushEventArgs): void {
    // A flush outside a transaction has committed by now.
    if (!em.isInTransaction()) this.#settle(em);
  }

  afterTransactionCommit({ em }: TransactionEventArgs): void {
    this.#settle(em);
  }

  afterTransactionRollback({ em }: TransactionEventArgs): void {
    this.#settle(em);
  }

  #settle(em: EntityManager): void {
    if (this.#uncommitted.delete(em)) this.#clear();
  }

  #clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}

export class WebhookService {
  private readonly stores: StoreLookupCache;
  private readonly syncJobs: SyncJobRepository;
  private readonly sourceSecrets: SourceSecrets;
  private readonly counters: SharedCounters;

  constructor(
    private readonly ctx: AppContext,
    private readonly jobs: SyncJobService,
    private readonly fulfillments: FulfillmentService,
    private readonly cancellations: CancellationService,
  ) {
    this.stores = new StoreLookupCache(ctx.config.webhookStoreCacheTtlMs);
    this.syncJobs = new SyncJobRepository(ctx.orm);
    this.sourceSecrets = new SourceSecrets(ctx);
    this.counters = new SharedCounters(sqlOf(ctx.orm));
    ctx.orm.em.getEventManager().registerSubscriber(this.stores);
  }

  /** The active reseller store that signed an orders/create delivery, or 401 invalid_signature. */
  async verifyResellerStore(delivery: Delivery): Promise<ResellerStore> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    const found = shopDomain
      ? await this.stores.get(`reseller:${shopDomain}`, async () => {
          const store = await this.ctx.orm.em.fork().findOne(ResellerStore, { shopDomain, deletedAt: null });
          return store && { store, secret: this.ctx.secrets.decrypt(store.webhookSecretEncrypted, store.id) };
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
   * counted per client on each domain and per client overall, across processes, and past either
   * limit only the domain's proven senders are tried: a delivery none of them signed gets 429,
   * which a platform retries. The counts are the client's own, so one client's forgeries never
   * hold back a delivery from another.
   */
  async verifySourceStores(delivery: Delivery): Promise<SourceStore[]> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    if (!shopDomain || !delivery.signature) throw this.refused('fulfillments');
    const budget = signatureFailureKeys(shopDomain, delivery.client);
    let retryAfterSeconds = 1;
    const check = await this.sourceSecrets.check(shopDomain, delivery.rawBody, delivery.signature, async () => {
      const spent = (await this.counters.current(budget)).filter((count) => count.hits >= this.ctx.config.webhookSignatureFailuresPerMinute);
      retryAfterSeconds = Math.max(1, ...spent.map((count) => Math.ceil((count.resetsAtMs - Date.now()) / 1000)));
      return spent.length === 0;
    });
    if (check.verdict === 'signed') return check.senders;
    if (check.verdict === 'limited') {
      this.ctx.metrics.webhookVerificationFailures.inc({ endpoint: 'fulfillments' });
      throw new AppError('rate_limited', { message: 'Too many deliveries with an invalid signature; retry later.', retryAfterSeconds });
    }
    // Only a domain with source stores costs anything to check; a made-up one is counted per client alone.
    await this.counters.hit(check.domainKnown ? budget : budget.slice(1), SIGNATURE_FAILURE_WINDOW_MS);
    throw this.refused('fulfillments');
  }

  private refused(endpoint: 'orders' | 'fulfillments'): AppError {
    this.ctx.metrics.webhookVerificationFailures.inc({ endpoint });
    return new AppError('invalid_signature');
  }

  /**
   * A reseller store's delivery, by topic: orders/create is read by the platform's reader and routed
   * (`routeOrder`); a storefront cancellation (src/cancellations/intake.ts) is recorded and applied;
   * any other topic asks for nothing.
   */
  async receiveOrder(store: ResellerStore, body: unknown, delivery: Delivery): Promise<WebhookAnswer> {
    const topic = delivery.topic ?? 'orders/create';
    if (STOREFRONT_CANCELLATION_TOPICS.has(topic)) return receiveStorefrontCancellation(this.cancellations, store, { ...delivery, topic }, body);
    if (topic !== 'orders/create') return IGNORED;
    const order = await this.readOrder(store, body, delivery);
    const routed = await this.routeOrder(store, order, { source: 'webhook', webhookId: delivery.webhookId ?? null });
    return { syncJobIds: routed.jobs.map((job) => job.id) };
  }

  /**
   * Routes an order, from its webhook or from reconciliation (which reads listed orders with the
   * same platform reader): one sync job per active source store whose vendor tag matches a line.
   * Jobs that already exist for the order (a redelivery) are returned, not created again. The order
   * is recorded as routed in the same transaction; `firstRouting` says whether this call did it.
   */
  async routeOrder(store: ResellerStore, order: ResellerOrder, via: RoutingVia): Promise<RoutedOrder> {
    const sources = (await this.stores.get(`sources:${store.id}`, () =>
      this.ctx.orm.em.fork().find(SourceStore, { resellerStoreId: store.id, deletedAt: null }),
    ))!;
    const lineKeys = new Set(order.lines.map((line) => normaliseVendor(line.vendor)));
    const sourceKeys = new Set(sources.map((source) => source.vendorKey));
    const matched = sources.filter((source) => lineKeys.has(source.vendorKey));
    const unmatched = order.lines.filter((line) => !sourceKeys.has(normaliseVendor(line.vendor)));

    const orderAudit = (action: string, metadata: Record<string, unknown>) => ({
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action,
      resourceType: 'order',
      resourceId: order.externalOrderId,
      actorId: SYSTEM_ACTOR,
      metadata,
    });
    const unmatchedAudit =
      unmatched.length > 0
        ? orderAudit('order.lines_unmatched', { lines: unmatched.map(({ sku, title, vendor, quantity }) => ({ sku, title, vendor, quantity })) })
        : undefined;
    const origin =
      via.source === 'webhook'
        ? { origin: 'webhook', webhookId: via.webhookId }
        : { origin: 'reconciliation', reconciliationId: via.reconciliationId };
    // An order whose cancellation came first: its jobs are held back until the cancellation ends them.
    const cancelledFirst = await this.cancellations.hasRecordedSignal(store.id, order.externalOrderId);
    const routed = await this.jobs.route(
      { ownerId: store.ownerId, resellerStoreId: store.id, externalOrderId: order.externalOrderId, order },
      matched.map((source) => source.id),
      { actorId: SYSTEM_ACTOR, metadata: origin },
      {
        source: via.source,
        onceForOrder: unmatchedAudit,
        onFirstRouting:
          via.source === 'reconciliation'
            ? orderAudit('order.reconciled', { reconciliationId: via.reconciliationId, sourceStoreIds: matched.map((source) => source.id) })
            : undefined,
        holdMs: cancelledFirst ? CANCELLED_FIRST_HOLD_MS : undefined,
      },
    );
    // A cancellation received before (or while) the order was routed applies to its jobs now.
    await this.cancellations.applyRecordedSignals(store.id, order.externalOrderId, cancelledFirst);
    return routed;
  }

  /**
   * The verified order, or 400 validation_failed naming the field: the order is refused as a whole
   * (no line of it is routed) and the refusal is audited, so the reseller can see why an order their
   * storefront sent never reached a supplier.
   */
  private async readOrder(store: ResellerStore, body: unknown, delivery: Delivery): Promise<ResellerOrder> {
    try {
      const order = parse(() => this.ctx.platforms[store.platform].parseOrderWebhook(body));
      if (!EXTERNAL_ORDER_ID.test(order.externalOrderId)) throw validationFailed('id', 'The order id is not a valid order id.');
      return order;
    } catch (error) {
      if (error instanceof AppError && error.code === 'validation_failed') await this.auditRefusal(store, body, delivery, error);
      throw error;
    }
  }

  private async auditRefusal(store: ResellerStore, body: unknown, delivery: Delivery, error: AppError): Promise<void> {
    const id = (body as { id?: unknown } | null)?.id;
    const em = this.ctx.orm.em.fork();
    recordAudit(em, {
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action: 'order.refused',
      resourceType: 'order',
      resourceId: (typeof id === 'string' || typeof id === 'number') && EXTERNAL_ORDER_ID.test(String(id)) ? String(id) : 'unknown',
      actorId: SYSTEM_ACTOR,
      metadata: { reason: error.message, param: error.param ?? null, webhookId: delivery.webhookId ?? null },
    });
    await em.flush();
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
    if (SUPPLIER_CANCELLATION_TOPICS.has(topic)) return receiveSupplierCancellation(this.cancellations, senders, { ...delivery, topic }, body);
    if (topic !== 'fulfillments/create') return IGNORED;
    return { syncJobIds: await this.receiveTracking(senders, body, delivery) };
  }

  private async receiveTracking(senders: SourceStore[], body: unknown, delivery: Delivery): Promise<string[]> {
    const fulfillment = parse(() => this.ctx.platforms[senders[0]!.platform].parseFulfillmentWebhook(body));
    const keys = fulfillmentKeys(fulfillment, delivery.webhookId);
    const job = await this.syncJobs.findBySourceOrder(
      senders.map((store) => store.id),
      fulfillment.sourceOrderId,
    );
    if (job) {
      const { created } = await this.fulfillments.receive(job, fulfillment.tracking, keys);
      // The supplier shipped a part the storefront cancelled: the reseller is told (cancellation.too_late).
      if (created) await this.cancellations.fulfilledAfterCancellation(job.id);
      return [job.id];
    }
    const held = await this.fulfillments.holdUnlessUnowned(senders, fulfillment, keys);
    this.ctx.logger.info(
      { shop_domain: senders[0]!.shopDomain, source_order_id: fulfillment.sourceOrderId, held },
      held ? 'fulfillment held until a job records its order' : 'fulfillment of an order the service never placed',
    );
    return [];
  }

}

const SIGNATURE_FAILURE_WINDOW_MS = 60_000;
/** Far longer than applying a recorded cancellation takes; should that fail, the jobs go ahead and are cancelled after. */
const CANCELLED_FIRST_HOLD_MS = 10_000;

/** A client's failures on one domain, then its failures on any: the first is left out for a domain without records. */
function signatureFailureKeys(shopDomain: string, client: string | undefined): string[] {
  // An IPv6 client by its /64 (one subscriber's network, any address of which a single host can use).
  const sender = client ? ipKeyGenerator(client, 64) : 'unknown';
  return [`signature:domain:${shopDomain}:client:${sender}`, `signature:client:${sender}`];
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
