/**
 * The platforms' cancellation webhooks (platforms.md), read into the service's own signals:
 * a reseller store's storefront cancellation, or a supplier's own cancellation of an order the
 * service placed. A topic or payload that asks for nothing reads as null (answered `ignored`).
 */
import { z } from 'zod';
import type { Platform } from '../orders/types.ts';
import { storableText } from '../shared/text.ts';
import { platformTime } from './listing.ts';
import { anyId, lineText, parsePayload } from './payload.ts';

/** The longest cancellation reason kept (`supplierCancelReason`, also when reports are joined); a longer one is cut, never refused. */
export const MAX_REASON_LENGTH = 500;

/** A cancellation on the storefront: the whole order, or these quantities of these lines (by SKU). */
export interface StorefrontCancellation {
  externalOrderId: string;
  scope: 'order' | 'lines';
  /** `vendor`: the line's own, when the webhook carries the line (a platform_a refund); '' for a line that names none (routed to no supplier), unlike an absent one, which may be any supplier's. */
  lines: { sku: string; quantity: number; vendor?: string }[];
  /** The platform's own id of this cancellation, when it has one (a platform_a Refund's `id`): one refund is one signal, whatever webhook id carries it. */
  refundId?: string;
  /**
   * When the storefront made it, as the platform says (custom `cancelledAt`, a platform_a Refund's
   * `created_at`), when readable: a storefront order read later shows it among its cancelled quantities.
   */
  occurredAt?: Date;
}

/** A supplier's cancellation of one of its orders. */
export interface SupplierCancellation {
  sourceOrderId: string;
  reason: string | null;
  /** The lines cancelled, when the supplier names them (custom); else the whole order. */
  lines?: { sku: string; quantity: number }[];
}

const positive = z.number().int().positive();
/** A platform's words for why: never a reason to refuse a cancellation, so any text is kept, cut to a storable length. */
const reasonText = z.string().nullish().transform((value) => (value == null ? null : storableText(value, MAX_REASON_LENGTH)));

const platformAOrder = z.object({ id: anyId, cancelled_at: z.string().nullish(), cancel_reason: reasonText });
const platformARefund = z.object({
  id: anyId.nullish(),
  order_id: anyId,
  created_at: z.unknown(),
  refund_line_items: z
    .array(z.object({ quantity: positive, restock_type: z.string(), line_item: z.object({ sku: lineText, vendor: lineText }).passthrough() }).passthrough())
    .nullish()
    .transform((lines) => lines ?? []),
});
const platformBOrder = z.object({ id: anyId, status: z.string() });
const customCancellation = z.object({
  id: anyId,
  // Any value but null, missing or empty says cancelled: a platform's odd timestamp must not lose a cancellation.
  cancelledAt: z.unknown(),
  reason: reasonText,
  lines: z.array(z.object({ sku: lineText, quantity: positive })).nullish(),
});

/**
 * Whether a cancellation webhook's body says it is one: platform_a's `orders/cancelled` is the Order
 * with `cancelled_at` set, custom's Cancellation carries `cancelledAt` (platforms.md). Only the body
 * is signed, not the `X-Platform-Topic` header: without this, the signed body of an order's
 * `orders/create` (the same Order, not cancelled) sent again under `orders/cancelled` cancelled it.
 */
function saysCancelled(at: unknown): boolean {
  return at !== null && at !== undefined && at !== false && !(typeof at === 'string' && at.trim() === '');
}

/** A platform's time of a cancellation, when it gives one readable. */
function occurredAt(value: unknown): Pick<StorefrontCancellation, 'occurredAt'> {
  const at = platformTime(value);
  return at ? { occurredAt: at } : {};
}

/** Sums the quantities of lines that share a SKU (and a vendor, when the lines name theirs). */
function bySku(lines: { sku: string; quantity: number; vendor?: string }[]) {
  const sums = new Map<string, { sku: string; quantity: number; vendor?: string }>();
  for (const line of lines) {
    const key = JSON.stringify([line.sku, line.vendor ?? null]);
    const sum = sums.get(key);
    if (sum) sum.quantity += line.quantity;
    else sums.set(key, { ...line });
  }
  return [...sums.values()];
}

/** The storefront cancellation a reseller store's webhook carries; null when it asks for nothing. Throws PayloadError. */
export function readStorefrontCancellation(platform: Platform, topic: string, body: unknown): StorefrontCancellation | null {
  if (platform === 'platform_a' && topic === 'orders/cancelled') {
    const order = parsePayload(platformAOrder, body, 'platform_a order');
    if (!saysCancelled(order.cancelled_at)) return null;
    return { externalOrderId: order.id, scope: 'order', lines: [] };
  }
  if (platform === 'platform_a' && topic === 'refunds/create') {
    // Only restock_type "cancel" cancels goods not shipped; `return` and `no_restock` concern shipped goods or money.
    const refund = parsePayload(platformARefund, body, 'platform_a refund');
    const cancelled = refund.refund_line_items.filter((line) => line.restock_type === 'cancel');
    if (cancelled.length === 0) return null;
    return {
      externalOrderId: refund.order_id,
      scope: 'lines',
      lines: bySku(cancelled.map((line) => ({ sku: line.line_item.sku, quantity: line.quantity, vendor: line.line_item.vendor }))),
      ...(refund.id != null && { refundId: refund.id }),
      ...occurredAt(refund.created_at),
    };
  }
  if (platform === 'platform_b' && topic === 'orders/updated') {
    const order = parsePayload(platformBOrder, body, 'platform_b order');
    return order.status === 'cancelled' || order.status === 'refunded' ? { externalOrderId: order.id, scope: 'order', lines: [] } : null;
  }
  if (platform === 'custom' && topic === 'orders/cancelled') {
    const cancellation = parsePayload(customCancellation, body, 'custom cancellation');
    if (!saysCancelled(cancellation.cancelledAt)) return null;
    if (!cancellation.lines) return { externalOrderId: cancellation.id, scope: 'order', lines: [] };
    return cancellation.lines.length > 0 ? { externalOrderId: cancellation.id, scope: 'lines', lines: bySku(cancellation.lines), ...occurredAt(cancellation.cancelledAt) } : null;
  }
  return null;
}

/** The supplier's own cancellation a source store's webhook carries; null when it asks for nothing. Throws PayloadError. */
export function readSupplierCancellation(platform: Platform, topic: string, body: unknown): SupplierCancellation | null {
  if (platform === 'platform_a' && topic === 'orders/cancelled') {
    const order = parsePayload(platformAOrder, body, 'platform_a order');
    if (!saysCancelled(order.cancelled_at)) return null;
    return { sourceOrderId: order.id, reason: order.cancel_reason };
  }
  if (platform === 'platform_b' && topic === 'orders/updated') {
    const order = parsePayload(platformBOrder, body, 'platform_b order');
    // Refunded ends the order as cancelled does (order-changes.md counts both on the storefront), and the watch reads it so.
    if (order.status === 'cancelled' || order.status === 'refunded') return { sourceOrderId: order.id, reason: platformBCancelReason(order.status) };
    return null;
  }
  if (platform === 'custom' && topic === 'orders/cancelled') {
    const cancellation = parsePayload(customCancellation, body, 'custom cancellation');
    if (!saysCancelled(cancellation.cancelledAt)) return null;
    // No `lines` is the whole order; lines that name none cancel nothing (as the storefront's reader reads them).
    if (cancellation.lines && cancellation.lines.length === 0) return null;
    const lines = cancellation.lines?.length ? `lines cancelled: ${cancellation.lines.map((l) => `${l.sku} × ${l.quantity}`).join(', ')}` : null;
    return {
      sourceOrderId: cancellation.id,
      // Bounded as a reason is: the lines are named in full in the cancellation's own `lines`.
      reason: storableText([cancellation.reason, lines].filter(Boolean).join('; '), MAX_REASON_LENGTH) || null,
      ...(cancellation.lines?.length && { lines: bySku(cancellation.lines) }),
    };
  }
  return null;
}

/** The reason a platform_b order's status gives for its end: a refund says so; a cancellation gives none. */
export const platformBCancelReason = (status: 'cancelled' | 'refunded'): string | null => (status === 'refunded' ? 'refunded' : null);
