/**
 * The lines a storefront order showed cancelled when it was routed (a custom order's lines'
 * `cancelledQuantity`, read by reconciliation's list or a late orders/create): routing records them
 * as one signal of the order (`listed:`, src/cancellations/signal-keys.ts), cut from its jobs before
 * any placement, so the supplier never gets them. The partial cancellations behind those quantities
 * may have their own webhooks, lost or late or early: each one made no later than the order as read
 * (`occurredAt` ≤ the listed signal's) is among those quantities, and is recorded and audited but not
 * applied again. Order-changes.md: repeated or overlapping requests never cancel more than was ordered.
 */
import type { OrderCancellation } from './entity.ts';
import { isListedSignal } from './signal-keys.ts';

const timeOf = (at: Date | string) => new Date(at).getTime();

/**
 * Of an order's signals (any orders', oldest first), those the order's listed signal already holds,
 * each with that listed signal. A lines signal is held when it was made no later than the listed
 * order was read and its quantities fit in what the listed signal has left once the older ones held
 * took theirs (by SKU); otherwise (made later, or with no time the platform gave) it is applied.
 */
export function heldByListed(signals: OrderCancellation[]): Map<string, OrderCancellation> {
  const held = new Map<string, OrderCancellation>();
  const byOrder = new Map<string, OrderCancellation[]>();
  for (const signal of signals) {
    const key = `${signal.resellerStoreId}\n${signal.externalOrderId}`;
    byOrder.set(key, [...(byOrder.get(key) ?? []), signal]);
  }
  for (const ofOrder of byOrder.values()) {
    const listed = ofOrder.find((signal) => isListedSignal(signal.dedupeKey));
    if (!listed?.occurredAt) continue;
    const left = new Map<string, number>();
    for (const line of listed.lines) left.set(line.sku, (left.get(line.sku) ?? 0) + line.quantity);
    for (const signal of ofOrder) {
      if (signal === listed || signal.scope !== 'lines' || !signal.occurredAt || timeOf(signal.occurredAt) > timeOf(listed.occurredAt)) continue;
      const asked = new Map<string, number>();
      for (const line of signal.lines) asked.set(line.sku, (asked.get(line.sku) ?? 0) + line.quantity);
      if (![...asked].every(([sku, quantity]) => (left.get(sku) ?? 0) >= quantity)) continue;
      for (const [sku, quantity] of asked) left.set(sku, left.get(sku)! - quantity);
      held.set(signal.id, listed);
    }
  }
  return held;
}
