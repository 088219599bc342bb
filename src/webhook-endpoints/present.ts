import { iso, isoOrNull } from '../shared/time.ts';
import type { WebhookDelivery, WebhookEndpoint } from './entity.ts';

/** Only these fields ever leave the service: the secrets stay sealed in the database. */
export function presentEndpoint(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    object: 'webhook_endpoint' as const,
    url: endpoint.url,
    enabledEvents: endpoint.enabledEvents,
    description: endpoint.description ?? null,
    status: endpoint.status,
    disabledReason: endpoint.disabledReason ?? null,
    createdAt: iso(endpoint.createdAt),
    updatedAt: iso(endpoint.updatedAt),
  };
}

export function presentDelivery(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    lastAttemptAt: isoOrNull(delivery.lastAttemptAt),
    nextAttemptAt: isoOrNull(delivery.nextAttemptAt),
    lastResponseStatus: delivery.lastResponseStatus ?? null,
    lastError: delivery.lastError ?? null,
    durationMs: delivery.durationMs ?? null,
  };
}
