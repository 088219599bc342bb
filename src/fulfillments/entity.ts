import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { FULFILLMENT_STATUSES } from '../../contract/enums.ts';
import type { Tracking } from '../orders/types.ts';
import { statusCountTriggers } from '../reseller-stores/status-count.entity.ts';

/** Tracking reported by a supplier, to be pushed to the reseller order (one per fulfillment event). */
export const Fulfillment = defineEntity({
  name: 'Fulfillment',
  tableName: 'fulfillments',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    syncJobId: p.string(),
    /**
     * Identifies the supplier's fulfillment: the platform's fulfillment id, else what it carries (the
     * order and its tracking numbers, however the JSON was written). See src/fulfillments/identity.ts.
     */
    dedupeKey: p.string().length(200),
    /** The X-Platform-Webhook-Id it was delivered under: a redelivery repeats it, whatever its body. */
    webhookId: p.string().length(200).nullable(),
    status: p.enum(FULFILLMENT_STATUSES),
    attempts: p.integer(),
    retriesLeft: p.integer(),
    tracking: p.json<Tracking>(),
    resellerFulfillmentId: p.string().nullable(),
    errorMessage: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    deadAt: p.datetime().nullable(),
    /** When the automatic retry scheduled after a failed attempt is due (its queue message's start); null unless `failed`. */
    nextRetryAt: p.datetime().nullable(),
    queueMessageId: p.string().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  uniques: [
    { name: 'fulfillments_job_dedupe_unique', properties: ['syncJobId', 'dedupeKey'] },
    { name: 'fulfillments_job_webhook_unique', properties: ['syncJobId', 'webhookId'] },
  ],
  indexes: [
    // The sweep's scan (src/attempts/sweep.ts): only unfinished rows have an entry, by when they were
    // last moved or, failed, when their retry is due: one waiting for a later retry is not read until then.
    {
      name: 'fulfillments_unfinished_due_index',
      properties: ['updatedAt', 'nextRetryAt'],
      expression: `create index "fulfillments_unfinished_due_index" on "fulfillments" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed')`,
    },
  ],
  triggers: statusCountTriggers('fulfillments', 'fulfillment'),
});
export type Fulfillment = InferEntity<typeof Fulfillment>;
