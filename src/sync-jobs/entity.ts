import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { PersistedSnapshot } from '../../machines/sync-job.machine.ts';
import type { ResellerOrder } from '../orders/types.ts';

export const SYNC_JOB_STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead'] as const;

/**
 * A sync job: the columns the API shows are a projection of the persisted XState snapshot
 * (`machineState`), kept as real columns so they can be filtered and indexed.
 */
export const SyncJob = defineEntity({
  name: 'SyncJob',
  tableName: 'sync_jobs',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    sourceStoreId: p.string(),
    externalOrderId: p.string().length(32),
    origin: p.enum(['webhook', 'manual'] as const),
    status: p.enum(SYNC_JOB_STATUSES),
    attempts: p.integer(),
    sourceOrderId: p.string().nullable(),
    errorMessage: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    deadAt: p.datetime().nullable(),
    /** The lifecycle machine's persisted snapshot (machines/sync-job.machine.ts). */
    machineState: p.json<PersistedSnapshot>(),
    /** The reseller order as the webhook delivered it; null for manual jobs (read from the platform). */
    order: p.json<ResellerOrder>().nullable(),
    /** Id of the only queue message allowed to move this job; older messages are stale. */
    queueMessageId: p.string().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  indexes: [
    { properties: ['ownerId', 'id'] },
    { properties: ['ownerId', 'status', 'id'] },
    { properties: ['sourceStoreId', 'sourceOrderId'] },
  ],
  uniques: [{ name: 'sync_jobs_order_source_store_unique', properties: ['externalOrderId', 'sourceStoreId'] }],
});
export type SyncJob = InferEntity<typeof SyncJob>;
