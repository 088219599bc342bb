import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const RECONCILIATION_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type ReconciliationStatus = (typeof RECONCILIATION_STATUSES)[number];
export const RECONCILIATION_TRIGGERS = ['scheduled', 'manual'] as const;

/**
 * One reconciliation of a reseller store: listing its recent orders and routing those whose webhook
 * never arrived. A run is `running` from the moment it is requested until a worker finishes it;
 * the partial unique index allows one running run per store, across every process.
 */
export const ReconciliationRun = defineEntity({
  name: 'ReconciliationRun',
  tableName: 'reconciliation_runs',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    trigger: p.enum(RECONCILIATION_TRIGGERS),
    status: p.enum(RECONCILIATION_STATUSES),
    /** `since` asked for by a manual run; null = from the store's watermark. */
    requestedSince: p.datetime().nullable(),
    /** Orders created since this were listed; set when a worker starts the listing. */
    since: p.datetime().nullable(),
    ordersSeen: p.integer(),
    ordersRouted: p.integer(),
    error: p.text().nullable(),
    /** How many times a worker took the run (more than once only after a worker was lost). */
    takes: p.integer(),
    /** The run belongs to its worker until then; a run whose lease expired was abandoned. */
    leaseExpiresAt: p.datetime(),
    /** Given back by a process that stopped mid-run (SIGTERM): the next worker takes it over at once, from `resumeSince`. */
    handedBack: p.boolean().default(false),
    /** Where a handed-back run's listing goes on: what the stopped process listed is not listed again. */
    resumeSince: p.datetime().nullable(),
    startedAt: p.datetime(),
    finishedAt: p.datetime().nullable(),
  },
  indexes: [
    { properties: ['resellerStoreId', 'id'] },
    { properties: ['resellerStoreId', 'startedAt'] },
  ],
  uniques: [{ name: 'reconciliation_runs_one_running_per_store', properties: ['resellerStoreId'], where: `status = 'running'` }],
});
export type ReconciliationRun = InferEntity<typeof ReconciliationRun>;

/**
 * Where a store's reconciliation stands. `watermark` is the creation time of the newest order a
 * successful run saw (the next run lists from a margin before it); `reconciledUntil` is the time
 * before which every order was listed by a successful run.
 */
export const ReconciliationWatermark = defineEntity({
  name: 'ReconciliationWatermark',
  tableName: 'reconciliation_watermarks',
  properties: {
    resellerStoreId: p.string().primary(),
    watermark: p.datetime(),
    reconciledUntil: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type ReconciliationWatermark = InferEntity<typeof ReconciliationWatermark>;
