import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { Tracking } from '../orders/types.ts';

/**
 * A supplier's fulfillment of an order no sync job has recorded (yet), while a job of that supplier
 * could still turn out to own it: one whose supplier order was sent but whose answer never came
 * back (the job failed or died after the supplier accepted it), or not yet. It is kept here instead
 * of being dropped, and becomes a fulfillment of the job that completes with that order id
 * (src/attempts/sweep.ts); once no job that existed when it arrived can own it, it was a direct
 * sale of the supplier's and is forgotten.
 */
export const HeldFulfillment = defineEntity({
  name: 'HeldFulfillment',
  tableName: 'held_fulfillments',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    sourceStoreId: p.string(),
    /** The supplier platform's order id the fulfillment names. */
    sourceOrderId: p.string(),
    dedupeKey: p.string().length(200),
    webhookId: p.string().length(200).nullable(),
    tracking: p.json<Tracking>(),
    receivedAt: p.datetime(),
    /**
     * The divergence-watch pass that found it (the supplier's list showed the shipment, no webhook
     * brought it); null for a webhook's. Its claim is then audited and announced `fulfillment.reconciled`.
     */
    watchPassId: p.string().nullable(),
    /**
     * When the sweep last failed to settle it: its supplier order read and the supplier could not
     * answer for now (429, 5xx, no answer), or its claim by its job failed. It is kept, and tried
     * again after every held fulfillment not tried since (src/fulfillments/repository.ts
     * `findUnowned`, `findClaimable`), so those that keep failing do not take every pass. Null until then.
     */
    readFailedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'held_fulfillments_order_dedupe_unique', properties: ['sourceStoreId', 'sourceOrderId', 'dedupeKey'] }],
});
export type HeldFulfillment = InferEntity<typeof HeldFulfillment>;
