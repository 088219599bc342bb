import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { CANCELLATION_OUTCOMES, CANCELLATION_SCOPES, CANCELLATION_STATUSES } from '../../contract/enums.ts';
import type { CancelledOrderLine } from '../orders/port.ts';

/** A line of a job's part of the order, by its storefront SKU, and a quantity of it. */
export interface CancelledLine {
  sku: string;
  quantity: number;
  /**
   * The SKU the supplier holds the line under, when its pricing (`field_rules` on `sku`) made another
   * one, as that pricing was when the cancellation was asked for; absent when it is the storefront's.
   * What the API shows (order-changes.md: "by the SKU the service placed them with").
   */
  supplierSku?: string;
}

/** The SKU a cancelled line is shown under: the supplier's (order-changes.md, "by the SKU the service placed them with"). */
export const shownSku = (line: CancelledLine): string => line.supplierSku ?? line.sku;

/**
 * One cancellation of a sync job's supplier order (or some of its lines): retried work like a
 * fulfillment (src/attempts/). Its lifecycle columns are the whole state of its machine
 * (machines/cancellation.machine.ts); `outcome` is the machine's result, `reason` what the outcome
 * needs said (the shipped lines of a `too_late`, the lines to handle by hand of an `unsupported`).
 */
export const Cancellation = defineEntity({
  name: 'Cancellation',
  tableName: 'cancellations',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    syncJobId: p.string(),
    /** The storefront signal (order_cancellations) that asked for it. */
    signalId: p.string(),
    scope: p.enum(CANCELLATION_SCOPES),
    /** The supplier lines to cancel (every line of the job for `order`). */
    lines: p.json<CancelledLine[]>(),
    status: p.enum(CANCELLATION_STATUSES),
    attempts: p.integer(),
    retriesLeft: p.integer(),
    outcome: p.enum(CANCELLATION_OUTCOMES).nullable(),
    reason: p.text().nullable(),
    /**
     * A `lines` cancellation after which nothing of the supplier order is left open (every other line
     * cancelled before it): the order is cancelled as a whole one would be. Not in the API.
     */
    closesOrder: p.boolean().default(false),
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
  uniques: [{ name: 'cancellations_signal_job_unique', properties: ['signalId', 'syncJobId'] }],
  indexes: [
    { properties: ['syncJobId'] },
    { properties: ['resellerStoreId'] },
    // The sweep's scan (src/attempts/sweep.ts): only unfinished rows have an entry, by when they were
    // last moved or, failed, when their retry is due: one waiting for a later retry is not read until then.
    {
      name: 'cancellations_unfinished_due_index',
      properties: ['updatedAt', 'nextRetryAt'],
      expression: `create index "cancellations_unfinished_due_index" on "cancellations" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed')`,
    },
  ],
});
export type Cancellation = InferEntity<typeof Cancellation>;

/**
 * A storefront cancellation as received (a webhook, or the divergence watch), whether or not its
 * order was routed: so an order whose cancellation came first is routed as cancelled. `lines` are
 * the reseller lines cancelled, by SKU (empty for the whole order). `dedupeKey` makes a redelivery
 * of one signal a no-op.
 */
export const OrderCancellation = defineEntity({
  name: 'OrderCancellation',
  tableName: 'order_cancellations',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    externalOrderId: p.string().length(32),
    scope: p.enum(CANCELLATION_SCOPES),
    lines: p.json<CancelledOrderLine[]>(),
    dedupeKey: p.string().length(255),
    receivedAt: p.datetime(),
    /**
     * When the storefront made it, as the platform said (a lines signal's webhook); for the signal
     * routing records from the storefront order (`listed:`), or the watch from a routed order it lists
     * (`shown:`), the time of the order as read: the signals made until then are among its lines
     * (src/cancellations/listed.ts). Null: compared by quantities alone.
     */
    occurredAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'order_cancellations_store_dedupe_unique', properties: ['resellerStoreId', 'dedupeKey'] }],
  indexes: [{ properties: ['resellerStoreId', 'externalOrderId'] }],
});
export type OrderCancellation = InferEntity<typeof OrderCancellation>;
