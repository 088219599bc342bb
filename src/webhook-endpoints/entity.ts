import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { DELIVERY_STATUSES } from '../../machines/delivery.machine.ts';

export const WEBHOOK_ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;

/** Where a user receives events: a URL, the event types it wants, and the secret deliveries are signed with. */
export const WebhookEndpoint = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    url: p.text(),
    /** `["*"]` or event types; matched by the outbox's fan-out (src/events/repository.ts). */
    enabledEvents: p.json<string[]>(),
    description: p.text().nullable(),
    status: p.enum(WEBHOOK_ENDPOINT_STATUSES),
    disabledReason: p.text().nullable(),
    /** `whsec_…`, AES-256-GCM sealed and bound to the endpoint (src/shared/secrets.ts); never leaves the service after it is shown once. */
    secretEncrypted: p.text().hidden(),
    /** The secret before the last rotation: deliveries are signed with it too until `previousSecretExpiresAt`. */
    previousSecretEncrypted: p.text().hidden().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    /** When the current run of failed attempts began; null after a success. Drives automatic disabling. */
    failingSince: p.datetime().nullable(),
    /**
     * When a delivery to it last failed. A failure longer after it than the delivery schedule's span
     * (no delivery was being retried in between) starts a new run: `failingSince` moves to it.
     */
    lastFailedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  indexes: [{ properties: ['ownerId', 'id'] }],
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpoint>;

/**
 * One event sent to one endpoint: attempted on the schedule of WEBHOOK_DELIVERY_SCHEDULE_MS until
 * one succeeds or the schedule runs out (machines/delivery.machine.ts). Its columns are the machine's state.
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    endpointId: p.string(),
    eventId: p.string(),
    eventType: p.string().length(64),
    status: p.enum(DELIVERY_STATUSES),
    /** Every attempt ever made, across manual retries. */
    attempts: p.integer(),
    /** Attempts since the delivery was created or last retried by hand: the position in the schedule. */
    scheduleAttempts: p.integer(),
    lastAttemptAt: p.datetime().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    lastResponseStatus: p.integer().nullable(),
    lastError: p.text().nullable(),
    /** The first 1 KiB of the receiver's last answer, for operators; never returned by the API. */
    lastResponseExcerpt: p.text().nullable(),
    durationMs: p.integer().nullable(),
    /** While an attempt holds one of the endpoint's sending slots: until when (a lease, freed when the attempt is recorded). */
    sendingUntil: p.datetime().nullable(),
    /** Id of the only queue message allowed to attempt this delivery; older ones are stale. */
    queueMessageId: p.string().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  indexes: [
    { properties: ['endpointId', 'id'] },
    { properties: ['eventId'] },
    // The oldest pending delivery (a metric).
    { properties: ['status', 'createdAt'] },
    // The slots an endpoint's attempts hold: only the few deliveries being sent are in it.
    {
      name: 'webhook_deliveries_sending_index',
      properties: ['endpointId'],
      expression: 'create index "webhook_deliveries_sending_index" on "webhook_deliveries" ("endpoint_id") where "sending_until" is not null',
    },
    // Pending deliveries by when they were last due or moved (`strandedDeliveries`): one waiting hours
    // for its next attempt is not in the range the sweep reads until then.
    {
      name: 'webhook_deliveries_pending_due_index',
      properties: ['updatedAt', 'nextAttemptAt'],
      expression:
        'create index "webhook_deliveries_pending_due_index" on "webhook_deliveries" ((greatest("updated_at", "next_attempt_at"))) where "status" = \'pending\'',
    },
  ],
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;
