/**
 * Cancelling orders as the three platforms do (platforms.md): platform_a's cancel and refund
 * (restock_type cancel), platform_b's status update, custom's cancel with or without lines; and
 * the supplier shipping an order (so a cancellation comes too late). Kept apart from platforms.ts
 * so the order lists and the rest of the sandbox stay as they are.
 */
import { z } from 'zod';
import type { Platform } from '../../src/orders/types.ts';
import { NOT_FOUND, accept, jsonBody } from './http.ts';
import type { JsonObject } from './payloads.ts';
import type { Reply, StoreState } from './state.ts';

/** What each simulated platform accepts when asked to cancel: built once, not per call. */
const platformARefundRequest = z.object({
  refund: z.object({
    refund_line_items: z.array(z.object({ line_item_id: z.number().int(), quantity: z.number().int().positive(), restock_type: z.string() })).min(1),
    notify: z.boolean().optional(),
  }),
});
const platformBStatusRequest = z.object({ status: z.string() });
const customCancelRequest = z.object({ lines: z.array(z.object({ sku: z.string(), quantity: z.number().int().positive() })).optional(), reason: z.string().optional() });

export interface CancelCall {
  platform: Platform;
  method: string;
  path: string;
  text: string;
}

type Line = JsonObject & { id?: number; sku: string; quantity: number; fulfillable_quantity?: number; cancelledQuantity?: number };

const A_CANCEL = /^\/admin\/api\/2025-01\/orders\/([^/]+)\/cancel\.json$/;
const A_REFUNDS = /^\/admin\/api\/2025-01\/orders\/([^/]+)\/refunds\.json$/;
const B_ORDER = /^\/wp-json\/wc\/v3\/orders\/([^/]+)$/;
const C_CANCEL = /^\/orders\/([^/]+)\/cancel$/;

/** Whether a platform call cancels something (the sandbox's cancel faults apply to those only). */
export function isCancelCall(method: string, path: string): boolean {
  return (method === 'POST' && (A_CANCEL.test(path) || A_REFUNDS.test(path) || C_CANCEL.test(path))) || (method === 'PUT' && B_ORDER.test(path));
}

let nextRefundId = 5_000_000;

/** The answer to a cancel call, or null when the call is not one. */
export function answerCancelCall(store: StoreState, call: CancelCall): Reply | null {
  const now = new Date().toISOString();
  const find = (match: RegExpExecArray | null) => (match ? store.order(call.platform, decodeURIComponent(match[1] ?? '')) : undefined);
  if (call.platform === 'platform_a' && call.method === 'POST' && A_CANCEL.test(call.path)) {
    const order = find(A_CANCEL.exec(call.path));
    if (!order) return NOT_FOUND;
    if (order.cancelled_at) return { status: 200, body: { order } };
    if (order.fulfillment_status === 'fulfilled' || order.fulfillment_status === 'partial') {
      return { status: 422, body: { errors: { base: ['Cannot cancel an order that has been fulfilled or partially fulfilled'] } } };
    }
    const lines = (order.line_items as Line[]).map((line) => ({ ...line, fulfillable_quantity: 0 }));
    const cancelled = { ...order, cancelled_at: now, cancel_reason: 'customer', updated_at: now, line_items: lines };
    store.saveOrder('platform_a', cancelled);
    store.cancellations.push({ platform: 'platform_a', orderId: String(order.id), lines: null, at: now });
    return { status: 200, body: { order: cancelled } };
  }
  if (call.platform === 'platform_a' && call.method === 'POST' && A_REFUNDS.test(call.path)) {
    const order = find(A_REFUNDS.exec(call.path));
    if (!order) return NOT_FOUND;
    const { refund } = accept(platformARefundRequest, jsonBody(call.text));
    const lines = (order.line_items as Line[]).map((line) => ({ ...line }));
    for (const item of refund.refund_line_items) {
      const line = lines.find((candidate) => candidate.id === item.line_item_id);
      if (!line) return { status: 422, body: { errors: { refund_line_items: [`line ${item.line_item_id} is not on the order`] } } };
      const open = line.fulfillable_quantity ?? line.quantity;
      if (item.restock_type === 'cancel' && item.quantity > open) {
        return { status: 422, body: { errors: { refund_line_items: [`quantity ${item.quantity} of line ${line.sku} is more than its unfulfilled quantity ${open}`] } } };
      }
      if (item.restock_type === 'cancel') line.fulfillable_quantity = open - item.quantity;
    }
    store.saveOrder('platform_a', { ...order, line_items: lines, updated_at: now });
    const cancelledLines = refund.refund_line_items.map((item) => ({ sku: lines.find((line) => line.id === item.line_item_id)!.sku, quantity: item.quantity }));
    store.cancellations.push({ platform: 'platform_a', orderId: String(order.id), lines: cancelledLines, at: now });
    return { status: 201, body: { refund: { id: nextRefundId++, order_id: order.id, created_at: now, refund_line_items: refund.refund_line_items } } };
  }
  if (call.platform === 'platform_b' && call.method === 'PUT' && B_ORDER.test(call.path)) {
    const order = find(B_ORDER.exec(call.path));
    if (!order) return NOT_FOUND;
    const { status } = accept(platformBStatusRequest, jsonBody(call.text));
    if (order.status === 'completed' && status === 'cancelled') return { status: 422, body: { code: 'woocommerce_rest_cannot_cancel', message: 'A completed order cannot be cancelled.' } };
    const updated = { ...order, status, date_modified_gmt: now.slice(0, 19) };
    store.saveOrder('platform_b', updated);
    if (status === 'cancelled' && order.status !== 'cancelled') store.cancellations.push({ platform: 'platform_b', orderId: String(order.id), lines: null, at: now });
    return { status: 200, body: updated };
  }
  if (call.platform === 'custom' && call.method === 'POST' && C_CANCEL.test(call.path)) {
    const order = find(C_CANCEL.exec(call.path));
    if (!order) return NOT_FOUND;
    const request = accept(customCancelRequest, jsonBody(call.text));
    const lines = (order.lines as Line[]).map((line) => ({ ...line, cancelledQuantity: line.cancelledQuantity ?? 0 }));
    if (order.status === 'cancelled') return { status: 200, body: order };
    // Shipped units (all of a fulfilled order's; those `shipOrder` shipped of an open one) cannot be
    // cancelled: asked for, the whole request is refused naming them, and nothing is cancelled.
    const fulfilledOf = (line: Line) => (line as { fulfilledQuantity?: number }).fulfilledQuantity ?? (order.status === 'fulfilled' ? line.quantity - (line.cancelledQuantity ?? 0) : 0);
    const wanted = request.lines ?? lines.map(({ sku, quantity, cancelledQuantity }) => ({ sku, quantity: quantity - cancelledQuantity }));
    const shipped = wanted.flatMap((asked) => {
      const line = lines.find((candidate) => candidate.sku === asked.sku);
      if (!line) return [];
      const fulfilled = fulfilledOf(line);
      return fulfilled > 0 && asked.quantity > line.quantity - line.cancelledQuantity - fulfilled ? [{ sku: asked.sku, quantity: Math.min(asked.quantity, fulfilled) }] : [];
    });
    if (shipped.length > 0) return { status: 409, body: { error: 'already_fulfilled', lines: shipped } };
    for (const asked of request.lines ?? lines.map(({ sku, quantity, cancelledQuantity }) => ({ sku, quantity: quantity - cancelledQuantity }))) {
      const line = lines.find((candidate) => candidate.sku === asked.sku);
      if (!line) return { status: 422, body: { errors: `no line ${asked.sku}` } };
      if (asked.quantity > line.quantity - line.cancelledQuantity) return { status: 422, body: { errors: `only ${line.quantity - line.cancelledQuantity} of ${asked.sku} left to cancel` } };
      line.cancelledQuantity += asked.quantity;
    }
    const whole = lines.every((line) => line.cancelledQuantity >= line.quantity);
    const updated = { ...order, lines, updatedAt: now, ...(whole && { status: 'cancelled', cancelledAt: now }) };
    store.saveOrder('custom', updated);
    store.cancellations.push({ platform: 'custom', orderId: String(order.id), lines: request.lines ?? null, at: now });
    return { status: 200, body: updated };
  }
  return null;
}

/**
 * The supplier ships an order it holds (all of it, or these quantities of these lines on platform_a
 * and custom): its GET then shows it fulfilled (custom: only once every unit shipped; its cancel
 * refuses the shipped ones), so a cancellation comes too late.
 */
export function shipOrder(store: StoreState, platform: Platform, id: string, lines?: { sku: string; quantity: number }[]): JsonObject {
  const order = store.order(platform, id);
  if (!order) throw new Error(`no ${platform} order ${id}`);
  const now = new Date().toISOString();
  let shipped: JsonObject;
  if (platform === 'platform_a') {
    const items = (order.line_items as Line[]).map((line) => ({ ...line }));
    const fulfilled: { id: number | undefined; sku: string; quantity: number }[] = [];
    for (const line of items) {
      const open = line.fulfillable_quantity ?? line.quantity;
      const quantity = lines ? Math.min(open, lines.find((l) => l.sku === line.sku)?.quantity ?? 0) : open;
      if (quantity <= 0) continue;
      line.fulfillable_quantity = open - quantity;
      fulfilled.push({ id: line.id, sku: line.sku, quantity });
    }
    const allShipped = items.every((line) => (line.fulfillable_quantity ?? line.quantity) === 0);
    const fulfillments = [...((order.fulfillments as JsonObject[] | undefined) ?? []), { id: nextRefundId++, status: 'success', line_items: fulfilled }];
    shipped = { ...order, line_items: items, fulfillments, fulfillment_status: allShipped ? 'fulfilled' : 'partial', updated_at: now };
  } else if (platform === 'platform_b') {
    shipped = { ...order, status: 'completed', date_modified_gmt: now.slice(0, 19) };
  } else if (lines) {
    // Some units shipped: the order stays open (custom shows no shipped quantities), its cancel refuses them.
    const items = (order.lines as (Line & { fulfilledQuantity?: number })[]).map((line) => {
      const open = line.quantity - (line.cancelledQuantity ?? 0) - (line.fulfilledQuantity ?? 0);
      const quantity = Math.min(open, lines.find((l) => l.sku === line.sku)?.quantity ?? 0);
      return { ...line, fulfilledQuantity: (line.fulfilledQuantity ?? 0) + quantity };
    });
    const allShipped = items.every((line) => line.quantity - (line.cancelledQuantity ?? 0) - line.fulfilledQuantity <= 0);
    shipped = { ...order, lines: items, ...(allShipped && { status: 'fulfilled' }), updatedAt: now };
  } else {
    shipped = { ...order, status: 'fulfilled', updatedAt: now };
  }
  store.saveOrder(platform, shipped);
  return shipped;
}
