import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { ATTEMPT_STATUSES } from '../../contract/enums.ts';
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
    /** Identifies the supplier's fulfillment event: its id, else the webhook id, else a body hash. */
    dedupeKey: p.string().length(200),
    status: p.enum(ATTEMPT_STATUSES),
    attempts: p.integer(),
    retriesLeft: p.integer(),
    tracking: p.json<Tracking>(),
    resellerFulfillmentId: p.string().nullable(),
    errorMessage: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    deadAt: p.datetime().nullable(),
    queueMessageId: p.string().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  uniques: [{ name: 'fulfillments_job_dedupe_unique', properties: ['syncJobId', 'dedupeKey'] }],
  triggers: statusCountTriggers('fulfillments', 'fulfillment'),
});
export type Fulfillment = InferEntity<typeof Fulfillment>;
