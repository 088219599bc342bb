import { applyDeliveryEvent } from '../../machines/delivery.machine.ts';
import { MAX_TEST_PINGS_PER_MINUTE, MAX_WEBHOOK_ENDPOINTS_PER_USER } from '../../contract/webhook-endpoints.ts';
import type { Config } from '../config/index.ts';
import type { Outbox } from '../events/outbox.ts';
import { pingEvent } from './events.ts';
import { newMessageId, QUEUES, type Queue } from '../queue/queue.ts';
import { AppError, conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { urlRefusal } from '../shared/url-safety.ts';
import type { WebhookDelivery, WebhookEndpoint } from './entity.ts';
import { abandonDelivery, moveToMessage, pingsSince, strandedDeliveries, type WebhookEndpointRepository } from './repository.ts';
import { newSigningSecret, previousSecretBinding } from './signing.ts';

/** Stranded deliveries one sweep pass rescues; the next pass takes the rest. */
const STRANDED_DELIVERIES_PER_PASS = 500;

export const DELIVERY_GIVEN_UP_ERROR = 'abandoned: its queue message was given up without an outcome being recorded (retry it by hand)';

/** How long deliveries are signed with the old secret too after a rotation (events.md). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface NewEndpoint {
  url: string;
  enabledEvents: string[];
  description?: string | undefined;
}

export interface EndpointChanges {
  url?: string | undefined;
  enabledEvents?: string[] | undefined;
  description?: string | null | undefined;
  status?: 'enabled' | 'disabled' | undefined;
}

export interface DeliveryFilters extends PageQuery {
  status?: WebhookDelivery['status'] | undefined;
  event_id?: string | undefined;
}

export class WebhookEndpointService {
  constructor(
    private readonly endpoints: WebhookEndpointRepository,
    private readonly ctx: { secrets: SecretBox; outbox: Outbox; queue: Queue; config: Pick<Config, 'webhooks' | 'urlPolicy'> },
  ) {}

  /** Creates the endpoint; `secret` is returned here and never again. */
  async create(ownerId: string, input: NewEndpoint): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    await this.checkUrl(input.url);
    const secret = newSigningSecret();
    // Counted under a lock per user, so concurrent requests cannot pass the limit together.
    const endpoint = await this.endpoints.insertCounted(ownerId, (count) => {
      if (count >= MAX_WEBHOOK_ENDPOINTS_PER_USER) {
        throw conflict('too_many_webhook_endpoints', `A user can have at most ${MAX_WEBHOOK_ENDPOINTS_PER_USER} webhook endpoints; delete one first.`);
      }
      const id = newId('webhookEndpoint');
      const now = new Date();
      return {
        id,
        ownerId,
        url: input.url,
        enabledEvents: input.enabledEvents,
        description: input.description ?? null,
        status: 'enabled',
        disabledReason: null,
        secretEncrypted: this.ctx.secrets.encrypt(secret, id),
        previousSecretEncrypted: null,
        previousSecretExpiresAt: null,
        failingSince: null,
        lastFailedAt: null,
        createdAt: now,
        updatedAt: now,
      };
    });
    return { endpoint, secret };
  }

  list(ownerId: string, page: PageQuery): Promise<Page<WebhookEndpoint>> {
    return this.endpoints.list(ownerId, page);
  }

  /** The caller's endpoint; another user's is "not found". */
  async get(ownerId: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.endpoints.findOwned(ownerId, id);
    if (!endpoint) throw notFound();
    return endpoint;
  }

  async update(ownerId: string, id: string, changes: EndpointChanges): Promise<WebhookEndpoint> {
    // The URL is checked (DNS) before the endpoint is locked, so no lock waits on a resolver.
    if (changes.url !== undefined && changes.url !== (await this.get(ownerId, id)).url) await this.checkUrl(changes.url);
    const changed = await this.endpoints.changeOwned(ownerId, id, (endpoint) => {
      if (changes.url !== undefined) endpoint.url = changes.url;
      if (changes.enabledEvents !== undefined) endpoint.enabledEvents = changes.enabledEvents;
      if (changes.description !== undefined) endpoint.description = changes.description;
      if (changes.status !== undefined && changes.status !== endpoint.status) {
        endpoint.status = changes.status;
        // Enabled again by its owner: the failures that disabled it start counting afresh.
        endpoint.disabledReason = null;
        endpoint.failingSince = null;
        endpoint.lastFailedAt = null;
      }
      endpoint.updatedAt = new Date();
    });
    if (!changed) throw notFound();
    return changed.endpoint;
  }

  /** Deletes the endpoint and its deliveries: their queued messages find nothing and stop. */
  async remove(ownerId: string, id: string): Promise<void> {
    const endpoint = await this.get(ownerId, id);
    await this.endpoints.deleteWithDeliveries(endpoint.id);
  }

  /** A new secret; deliveries are signed with the old one too for ROTATION_OVERLAP_MS. */
  async rotateSecret(ownerId: string, id: string): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newSigningSecret();
    const rotated = await this.endpoints.changeOwned(ownerId, id, (endpoint) => {
      const now = new Date();
      const current = this.ctx.secrets.decrypt(endpoint.secretEncrypted, endpoint.id);
      endpoint.previousSecretEncrypted = this.ctx.secrets.encrypt(current, previousSecretBinding(endpoint.id));
      endpoint.previousSecretExpiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS);
      endpoint.secretEncrypted = this.ctx.secrets.encrypt(secret, endpoint.id);
      endpoint.updatedAt = now;
    });
    if (!rotated) throw notFound();
    return { endpoint: rotated.endpoint, secret };
  }

  /**
   * No delivery stays pending for good (its event unprunable): one whose queue message is gone is
   * handed to a new message, at once; one whose message pg-boss gave up on (its handler could not
   * record an outcome, e.g. through a long database outage) ends `failed`, as the attempts' sweep ends
   * such a job `dead`, and can be retried by hand. A sweep hook: one process at a time, after the
   * attempts' sweep (src/attempts/sweep.ts).
   */
  async rescueStrandedDeliveries(staleBefore: Date): Promise<{ deliveriesRequeued: number; deliveriesAbandoned: number }> {
    return this.endpoints.transaction(async (trx) => {
      const stranded = await strandedDeliveries(trx, QUEUES.webhookDelivery.name, staleBefore, STRANDED_DELIVERIES_PER_PASS);
      const now = new Date();
      const requeued = [];
      let abandoned = 0;
      for (const delivery of stranded) {
        if (delivery.givenUp) {
          if (await abandonDelivery(trx, delivery.id, delivery.version, DELIVERY_GIVEN_UP_ERROR, now)) abandoned++;
          continue;
        }
        const queueMessageId = newMessageId();
        if (await moveToMessage(trx, delivery.id, delivery.version, queueMessageId, now)) requeued.push({ id: queueMessageId, message: { deliveryId: delivery.id }, groupId: delivery.endpointId });
      }
      await this.ctx.queue.insertIn(trx, 'webhookDelivery', requeued);
      return { deliveriesRequeued: requeued.length, deliveriesAbandoned: abandoned };
    });
  }

  /** Queues a `ping` for this endpoint only; returns its delivery. */
  async test(ownerId: string, id: string): Promise<WebhookDelivery> {
    const endpoint = await this.get(ownerId, id);
    if (endpoint.status !== 'enabled') throw endpointDisabled();
    const deliveryId = await this.endpoints.transaction(async (trx) => {
      // Counted under the endpoint's row lock, so concurrent requests cannot overshoot the limit.
      const pings = await pingsSince(trx, endpoint.id, new Date(Date.now() - 60_000));
      if (pings === null) throw notFound();
      if (pings >= MAX_TEST_PINGS_PER_MINUTE) {
        throw new AppError('rate_limited', {
          message: `At most ${MAX_TEST_PINGS_PER_MINUTE} test events per endpoint per minute; retry later.`,
          retryAfterSeconds: 60,
        });
      }
      return this.ctx.outbox.appendForEndpoint(trx, pingEvent(endpoint.ownerId, endpoint.id), endpoint.id);
    });
    return this.endpoints.findDelivery(deliveryId);
  }

  async listDeliveries(ownerId: string, id: string, filters: DeliveryFilters): Promise<Page<WebhookDelivery>> {
    const endpoint = await this.get(ownerId, id);
    return this.endpoints.listDeliveries(endpoint.id, filters);
  }

  /**
   * Sends a failed delivery again with a fresh schedule, under the same `webhook-id`. Its new queue
   * message commits with the row, and makes any older message for it stale.
   */
  async retryDelivery(ownerId: string, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
    const endpoint = await this.get(ownerId, endpointId);
    return this.endpoints.changeDelivery(ownerId, endpoint.id, deliveryId, async (delivery, trx) => {
      if (!delivery) throw notFound();
      const next = applyDeliveryEvent(delivery, { type: 'RETRY' }, this.ctx.config.webhooks.deliveryScheduleMs);
      if (!next) throw conflict('delivery_not_failed', `Only failed deliveries can be retried; this one is ${delivery.status}.`);
      if (endpoint.status !== 'enabled') throw endpointDisabled();
      const now = new Date();
      const queueMessageId = newMessageId();
      Object.assign(delivery, next.state, {
        nextAttemptAt: new Date(now.getTime() + next.nextAttemptInMs!),
        queueMessageId,
        updatedAt: now,
      });
      await this.ctx.queue.insertIn(trx, 'webhookDelivery', [
        { id: queueMessageId, message: { deliveryId: delivery.id }, delayMs: next.nextAttemptInMs!, groupId: endpoint.id },
      ]);
      return delivery;
    });
  }

  private async checkUrl(url: string): Promise<void> {
    const refusal = await urlRefusal(url, this.ctx.config.urlPolicy);
    if (refusal) throw validationFailed('url', `The URL ${refusal}.`);
  }
}

const endpointDisabled = () => conflict('endpoint_disabled', 'The endpoint is disabled; enable it first.');
