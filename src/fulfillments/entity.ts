import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { PersistedSnapshot } from '../../machines/fulfillment.machine.ts';
import type { Tracking } from '../orders/types.ts';
import { SYNC_JOB_STATUSES } from '../sync-jobs/entity.ts';

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
    status: p.enum(SYNC_JOB_STATUSES),
    attempts: p.integer(),
    tracking: p.json<Tracking>(),
    resellerFulfillmentId: p.string().nullable(),
    errorMessage: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    deadAt: p.datetime().nullable(),
    /** The lifecycle machine's persisted snapshot (machines/fulfillment.machine.ts). */
    machineState: p.json<PersistedSnapshot>(),
    queueMessageId: p.string().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  uniques: [{ name: 'fulfillments_job_dedupe_unique', properties: ['syncJobId', 'dedupeKey'] }],
});
export type Fulfillment = InferEntity<typeof Fulfillment>;
