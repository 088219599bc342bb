import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { SYNC_JOB_STATUSES } from '../../contract/enums.ts';
import type { ResellerOrder } from '../orders/types.ts';
import type { SupplierLine } from '../platforms/types.ts';
import { statusCountTriggers } from '../reseller-stores/status-count.entity.ts';

/** A supplier's own cancellation as a job records it (`supplierCancelledAt`, `supplierCancelReason`, `supplierCancelledLines`). */
export interface SupplierCancelled {
  at: Date;
  reason: string | null;
  /** The lines it named, per SKU; null: the whole order. */
  lines: { sku: string; quantity: number }[] | null;
}

/**
 * A sync job: one supplier's part of a reseller order, placed on the supplier's store. Its lifecycle
 * columns (status … deadAt, retriesLeft, sourceOrderId) are the whole state of its attempt machine:
 * the machine's snapshot is rebuilt from them (src/attempts/kind.ts), never stored.
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
    /** Automatic retries still allowed after a failure (the machine's `retriesLeft`). */
    retriesLeft: p.integer(),
    sourceOrderId: p.string().nullable(),
    errorMessage: p.text().nullable(),
    completedAt: p.datetime().nullable(),
    failedAt: p.datetime().nullable(),
    deadAt: p.datetime().nullable(),
    /** When the automatic retry scheduled after a failed attempt is due (its queue message's start); null unless `failed`. */
    nextRetryAt: p.datetime().nullable(),
    /** The reseller order as the webhook delivered it; null for manual jobs (read from the platform). */
    order: p.json<ResellerOrder>().nullable(),
    /**
     * The orders a manual job's attempts read and sent to the supplier (open lines, with what each read
     * showed cancelled), oldest first, each written before its create call (one per different set of
     * supplier lines). A retry's create gets back the order an earlier attempt created, whatever it
     * sends (the Idempotency-Key's replay; or the lookup by reference finds it): the placement records
     * as the job's `order` the one the supplier holds, so cancellations are planned against it. Null
     * for jobs routed from a webhook and manual jobs that sent nothing yet.
     */
    sentOrders: p.json<ResellerOrder[]>().nullable(),
    /** Id of the only queue message allowed to move this job; older messages are stale. */
    queueMessageId: p.string().nullable(),
    /** When the supplier cancelled the order the service placed, on its own (order-changes.md). */
    supplierCancelledAt: p.datetime().nullable(),
    supplierCancelReason: p.text().nullable(),
    /**
     * The lines the supplier's own cancellation named, when it named some (a custom supplier's
     * cancellation of some lines; per SKU, the most it reported), so a later cancellation of more of
     * the order (the rest, or the whole) is recorded too; null when it cancelled the whole order (or
     * has not cancelled). Not shown: `supplierCancelReason` names the lines.
     */
    supplierCancelledLines: p.json<{ sku: string; quantity: number }[]>().nullable(),
    /**
     * The supplier order's lines with the supplier's own line ids, as its create answer gave them
     * (a cancellation of some lines names them); else as a cancellation read them from the order
     * (placed before they were kept, or found by its reference after a lost answer). Null until known.
     */
    supplierLines: p.json<SupplierLine[]>().nullable(),
    version: p.integer().version(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  indexes: [
    { properties: ['ownerId', 'id'] },
    { properties: ['ownerId', 'status', 'id'] },
    { properties: ['sourceStoreId', 'sourceOrderId'] },
    // A store's newest job (its last order, in the store's stats) and the store filters of lists and bulk retry.
    { name: 'sync_jobs_reseller_store_id_id_index', properties: ['resellerStoreId', 'id'] },
    // The oldest pending job of a store (stats): only pending rows have an entry, so it stays small.
    { name: 'sync_jobs_pending_since_index', properties: ['resellerStoreId', 'updatedAt'], where: "status = 'pending'" },
    // The sweep's scan (src/attempts/sweep.ts): only unfinished rows have an entry, by when they were
    // last moved or, failed, when their retry is due: one waiting for a later retry is not read until then.
    {
      name: 'sync_jobs_unfinished_due_index',
      properties: ['updatedAt', 'nextRetryAt'],
      expression: `create index "sync_jobs_unfinished_due_index" on "sync_jobs" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed')`,
    },
  ],
  uniques: [{ name: 'sync_jobs_order_source_store_unique', properties: ['externalOrderId', 'sourceStoreId'] }],
  triggers: statusCountTriggers('sync_jobs', 'sync_job'),
});
export type SyncJob = InferEntity<typeof SyncJob>;

/**
 * How a job ended unplaced (VOID, no supplier order) came to know the supplier order its reference
 * names after all: the `foundBy` (and `watchPassId`) of its audit entry `sync_job.order_found`
 * (`SyncJobRepository.recordFoundOrder`). By its whole-order cancellation's lookup; by a
 * divergence-watch pass that listed it (a job whose cancellation is not over, or one ended
 * `not_placed` whose order then shipped); by a fulfillment webhook naming it (a job ended `not_placed`).
 */
export type OrderFoundBy = { by: 'cancellation' } | { by: 'divergence_watch'; watchPassId: string } | { by: 'fulfillment_webhook' };
