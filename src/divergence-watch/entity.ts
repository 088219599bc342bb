import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

import { DIVERGENCE_STATUSES, DIVERGENCE_TYPES } from '../../contract/divergences.ts';

export { DIVERGENCE_STATUSES, DIVERGENCE_TYPES };
/** The reseller's to-do list (order-changes.md, "The divergence watch"): what could not be repaired. */
export type DivergenceType = (typeof DIVERGENCE_TYPES)[number];
export type DivergenceStatus = (typeof DIVERGENCE_STATUSES)[number];

/**
 * One item of a reseller's to-do list. At most one open-or-dismissed entry per job and type (the
 * partial unique index): raising it again while it is open changes nothing, and a dismissed entry
 * is never raised again. A resolved entry stays as history; the same trouble later raises a new one.
 */
export const Divergence = defineEntity({
  name: 'Divergence',
  tableName: 'divergences',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    syncJobId: p.string(),
    type: p.enum(DIVERGENCE_TYPES),
    status: p.enum(DIVERGENCE_STATUSES),
    /** What it is about: the job, the fulfillment or the cancellation (its id). */
    subjectId: p.string(),
    detail: p.text().nullable(),
    since: p.datetime(),
    resolvedAt: p.datetime().nullable(),
    dismissedAt: p.datetime().nullable(),
  },
  indexes: [
    // The store's open list, newest first, and the attention counts.
    { name: 'divergences_store_open_index', properties: ['resellerStoreId', 'id'], where: "status = 'open'" },
    // A completion resolving its entry (the attempt transition statement, on every completion).
    { name: 'divergences_open_subject_index', properties: ['subjectId'], where: "status = 'open'" },
  ],
  uniques: [{ name: 'divergences_job_type_unique', properties: ['syncJobId', 'type'], where: "status in ('open', 'dismissed')" }],
});
export type Divergence = InferEntity<typeof Divergence>;

export const WATCH_PASS_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type WatchPassStatus = (typeof WATCH_PASS_STATUSES)[number];

/**
 * One divergence-watch pass over a reseller store and its suppliers: `running` from the request
 * until a worker finishes it; the partial unique index allows one running pass per store across
 * every process (as reconciliation_runs).
 */
export const WatchPass = defineEntity({
  name: 'WatchPass',
  tableName: 'watch_passes',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    trigger: p.enum(['scheduled', 'manual'] as const),
    status: p.enum(WATCH_PASS_STATUSES),
    ordersSeen: p.integer(),
    repairs: p.integer(),
    platformReads: p.integer(),
    error: p.text().nullable(),
    takes: p.integer(),
    leaseExpiresAt: p.datetime(),
    /** Given back by a process that stopped mid-pass (SIGTERM): the next worker takes it over at once. */
    handedBack: p.boolean().default(false),
    startedAt: p.datetime(),
    finishedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['resellerStoreId', 'startedAt'] }],
  uniques: [{ name: 'watch_passes_one_running_per_store', properties: ['resellerStoreId'], where: `status = 'running'` }],
});
export type WatchPass = InferEntity<typeof WatchPass>;

/** Where the watch's updated-since listing of one store (reseller or source) stands: the newest update a pass saw. */
export const WatchWatermark = defineEntity({
  name: 'WatchWatermark',
  tableName: 'watch_watermarks',
  properties: {
    storeId: p.string().primary(),
    watermark: p.datetime(),
    updatedAt: p.datetime(),
  },
});
export type WatchWatermark = InferEntity<typeof WatchWatermark>;
