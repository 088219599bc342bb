import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { CancelledLine } from './entity.ts';

/**
 * A supplier's own cancellation (its webhook) of an order no sync job has recorded, while a job of
 * that supplier could still turn out to own it: one whose supplier order was sent but whose answer
 * never came back (the job failed or died after the supplier accepted it). As a held fulfillment
 * (src/fulfillments/held.entity.ts) it is kept instead of being dropped, and is recorded on the job
 * that learns that order id (a retry, reconciliation or the divergence watch finding it) by the
 * sweep (`CancellationService.claimHeld`); once no job that existed when it arrived can own the
 * order, it was the supplier's own sale and is forgotten.
 */
export const HeldSupplierCancellation = defineEntity({
  name: 'HeldSupplierCancellation',
  tableName: 'held_supplier_cancellations',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    sourceStoreId: p.string(),
    /** The supplier platform's order id the cancellation names. */
    sourceOrderId: p.string(),
    /**
     * What it cancels (`order`, or `lines:` and a digest of the lines): a redelivery, or the same
     * cancellation under another topic, is kept once; a wider one beside it.
     */
    dedupeKey: p.string().length(200),
    /** The supplier's reason, when it gave one (`supplierCancelReason`). */
    reason: p.text().nullable(),
    /** The lines it names (a custom supplier's cancellation of some lines); null for the whole order. */
    lines: p.json<CancelledLine[]>().nullable(),
    /** When the supplier cancelled: when it arrived (`supplierCancelledAt` once recorded). */
    cancelledAt: p.datetime(),
    /** How it came (`{ source: 'webhook', topic, webhookId }`): the audit entry's metadata once recorded. */
    via: p.json<Record<string, unknown>>(),
    receivedAt: p.datetime(),
    /** When the sweep last failed to record it on its job (an error of its own): tried again behind the others. */
    claimFailedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'held_supplier_cancellations_order_dedupe_unique', properties: ['sourceStoreId', 'sourceOrderId', 'dedupeKey'] }],
});
export type HeldSupplierCancellation = InferEntity<typeof HeldSupplierCancellation>;
