import { createHash } from 'node:crypto';
import { AuditEntry } from '../audit-log/entity.ts';
import { recordAudit, SYSTEM_ACTOR } from '../audit-log/service.ts';
import type { AppContext } from '../context.ts';
import type { FulfillmentService } from '../fulfillments/service.ts';
import { PayloadError } from '../platforms/types.ts';
import { normaliseVendor } from '../pricing/index.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { AppError, validationFailed } from '../shared/errors.ts';
import { SyncJob } from '../sync-jobs/entity.ts';
import type { SyncJobService } from '../sync-jobs/service.ts';
import { verifySignature } from './signature.ts';

export interface Delivery {
  shopDomain: string | undefined;
  signature: string | undefined;
  topic: string | undefined;
  webhookId: string | undefined;
  rawBody: Buffer;
}

const EXTERNAL_ORDER_ID = /^[A-Za-z0-9_-]{1,32}$/;

export class WebhookService {
  constructor(
    private readonly ctx: AppContext,
    private readonly jobs: SyncJobService,
    private readonly fulfillments: FulfillmentService,
  ) {}

  /** The active reseller store that signed an orders/create delivery, or 401 invalid_signature. */
  async verifyResellerStore(delivery: Delivery): Promise<ResellerStore> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    const store = shopDomain ? await this.ctx.orm.em.fork().findOne(ResellerStore, { shopDomain, deletedAt: null }) : null;
    if (!store || !this.signedBy(store, delivery)) throw this.refused('orders');
    return store;
  }

  /**
   * The active source stores that signed a fulfillments/create delivery. Several source store
   * records (of different resellers) may share a supplier's domain: the ones whose secret
   * verifies are the senders.
   */
  async verifySourceStores(delivery: Delivery): Promise<SourceStore[]> {
    const shopDomain = normaliseDomain(delivery.shopDomain);
    const candidates = shopDomain ? await this.ctx.orm.em.fork().find(SourceStore, { shopDomain, deletedAt: null }) : [];
    const senders = candidates.filter((store) => this.signedBy(store, delivery));
    if (senders.length === 0) throw this.refused('fulfillments');
    return senders;
  }

  private refused(endpoint: 'orders' | 'fulfillments'): AppError {
    this.ctx.metrics.webhookVerificationFailures.inc({ endpoint });
    return new AppError('invalid_signature');
  }

  /**
   * Routes an order: one sync job per active source store whose vendor tag matches a line. Jobs
   * that already exist for the order (a redelivery) are returned, not created again.
   */
  async receiveOrder(store: ResellerStore, body: unknown, delivery: Delivery): Promise<string[]> {
    expectTopic(delivery.topic, 'orders/create');
    const order = parse(() => this.ctx.platforms[store.platform].parseOrderWebhook(body));
    if (!EXTERNAL_ORDER_ID.test(order.externalOrderId)) throw validationFailed('id', 'The order id is not a valid order id.');

    const sources = await this.ctx.orm.em.fork().find(SourceStore, { resellerStoreId: store.id, deletedAt: null });
    const matched = sources.filter((source) => order.lines.some((line) => normaliseVendor(line.vendor) === source.vendorKey));
    const unmatched = order.lines.filter((line) => !sources.some((source) => normaliseVendor(line.vendor) === source.vendorKey));

    const results = await this.jobs.createJobs(
      { resellerStoreId: store.id, externalOrderId: order.externalOrderId },
      matched.map((source) => ({
        ownerId: store.ownerId,
        resellerStoreId: store.id,
        sourceStoreId: source.id,
        externalOrderId: order.externalOrderId,
        order,
      })),
      { actorId: SYSTEM_ACTOR, metadata: { origin: 'webhook', webhookId: delivery.webhookId ?? null } },
      async (em) => {
        // Under the order's lock: recorded once per order, however often it is redelivered.
        const where = { resellerStoreId: store.id, action: 'order.lines_unmatched', resourceId: order.externalOrderId };
        if (unmatched.length > 0 && (await em.count(AuditEntry, where)) === 0) {
          recordAudit(em, {
            ownerId: store.ownerId,
            resellerStoreId: store.id,
            action: 'order.lines_unmatched',
            resourceType: 'order',
            resourceId: order.externalOrderId,
            actorId: SYSTEM_ACTOR,
            metadata: { lines: unmatched.map(({ sku, title, vendor, quantity }) => ({ sku, title, vendor, quantity })) },
          });
        }
      },
    );
    return results.map(({ job }) => job.id);
  }

  /** Queues the tracking of a supplier's fulfillment for the reseller order, once per event. */
  async receiveFulfillment(senders: SourceStore[], body: unknown, delivery: Delivery): Promise<string[]> {
    expectTopic(delivery.topic, 'fulfillments/create');
    const fulfillment = parse(() => this.ctx.platforms[senders[0]!.platform].parseFulfillmentWebhook(body));
    const job = await this.ctx.orm.em.fork().findOne(SyncJob, {
      sourceStoreId: { $in: senders.map((store) => store.id) },
      sourceOrderId: fulfillment.sourceOrderId,
    });
    if (!job) {
      await this.refuseWhileOrdersUnrecorded(senders, fulfillment.sourceOrderId);
      // Not an order we placed: acknowledged so the platform stops resending.
      this.ctx.logger.warn({ shop_domain: senders[0]!.shopDomain, source_order_id: fulfillment.sourceOrderId }, 'fulfillment for an unknown order');
      return [];
    }
    const dedupeKey = fulfillment.fulfillmentId
      ? `fulfillment:${fulfillment.fulfillmentId}`
      : delivery.webhookId
        ? `webhook:${delivery.webhookId.slice(0, 180)}`
        : `body:${createHash('sha256').update(delivery.rawBody).digest('hex')}`;
    await this.fulfillments.receive(job, fulfillment.tracking, dedupeKey);
    return [job.id];
  }

  /**
   * A fast supplier can fulfil before we recorded the order id it gave us (the worker is still
   * between placing and recording, or died there and will be retried). While any of its jobs has
   * no recorded outcome, answer 503 so the platform redelivers later instead of the tracking
   * being acknowledged and lost.
   */
  private async refuseWhileOrdersUnrecorded(senders: SourceStore[], sourceOrderId: string): Promise<void> {
    const unrecorded = await this.ctx.orm.em.fork().count(SyncJob, {
      sourceStoreId: { $in: senders.map((store) => store.id) },
      status: { $in: ['pending', 'processing', 'failed'] },
    });
    if (unrecorded > 0) {
      throw new AppError('unavailable', {
        message: `Order ${sourceOrderId} is not known yet; deliver the fulfillment again later.`,
        retryAfterSeconds: 30,
      });
    }
  }

  private signedBy(store: { id: string; webhookSecretEncrypted: string }, delivery: Delivery): boolean {
    if (!delivery.signature) return false;
    return verifySignature(delivery.rawBody, this.ctx.secrets.decrypt(store.webhookSecretEncrypted, store.id), delivery.signature);
  }
}

function normaliseDomain(domain: string | undefined): string | null {
  const normalised = domain?.trim().toLowerCase();
  return normalised && normalised.length <= 255 ? normalised : null;
}

function expectTopic(topic: string | undefined, expected: string): void {
  if (topic !== undefined && topic !== expected) {
    throw validationFailed('x-platform-topic', `This endpoint receives ${expected} webhooks, not ${topic}.`);
  }
}

function parse<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof PayloadError) throw validationFailed(error.path ?? 'body', error.message);
    throw error;
  }
}
