import type { OrderCancelling } from '../orders/port.ts';
import { EXTERNAL_ORDER_ID, type Platform } from '../orders/types.ts';
import { readStorefrontCancellation, readSupplierCancellation } from '../platforms/cancel-webhooks.ts';
import { PayloadError } from '../platforms/types.ts';
import { validationFailed } from '../shared/errors.ts';
import { dedupeKeyOf } from './signal-keys.ts';
import type { SupplierCancellations } from './service.ts';

/** What a webhook delivery came to: the jobs it concerned, or nothing asked (`ignored`). */
export interface WebhookAnswer {
  syncJobIds?: string[];
  ignored?: true;
}

export const IGNORED: WebhookAnswer = { ignored: true };

/** The reseller store's topics that may cancel (order-changes.md, "Signals in"). */
export const STOREFRONT_CANCELLATION_TOPICS: ReadonlySet<string> = new Set(['orders/cancelled', 'refunds/create', 'orders/updated']);
/** The source store's topics that may carry the supplier's own cancellation. */
export const SUPPLIER_CANCELLATION_TOPICS: ReadonlySet<string> = new Set(['orders/cancelled', 'orders/updated']);

function read<T>(reader: () => T): T {
  try {
    return reader();
  } catch (error) {
    if (error instanceof PayloadError) throw validationFailed(error.path ?? 'body', error.message);
    throw error;
  }
}

/**
 * A storefront's cancellation webhook, verified: read by the platform's reader, then handed to the
 * order module (`OrderCancelling.cancel`, src/orders/port.ts), or ignored when it asks for nothing.
 */
export async function receiveStorefrontCancellation(
  orders: OrderCancelling,
  store: { id: string; ownerId: string; platform: Platform },
  delivery: { topic: string; webhookId: string | undefined; rawBody: Buffer },
  body: unknown,
): Promise<WebhookAnswer> {
  const signal = read(() => readStorefrontCancellation(store.platform, delivery.topic, body));
  if (!signal) return IGNORED;
  // No order can have it (orders/create refuses it the same way), and no cancellation could record it.
  if (!EXTERNAL_ORDER_ID.test(signal.externalOrderId)) throw validationFailed(delivery.topic === 'refunds/create' ? 'order_id' : 'id', 'The order id is not a valid order id.');
  const { syncJobIds } = await orders.cancel(
    store,
    { externalOrderId: signal.externalOrderId, scope: signal.scope, lines: signal.lines, dedupeKey: dedupeKeyOf(delivery.topic, delivery.webhookId, delivery.rawBody, signal.refundId), occurredAt: signal.occurredAt ?? null },
    { source: 'webhook', topic: delivery.topic, webhookId: delivery.webhookId ?? null },
  );
  return { syncJobIds };
}

/** A supplier's own cancellation webhook, verified: recorded on the job that placed the order, if any. */
export async function receiveSupplierCancellation(
  cancellations: SupplierCancellations,
  senders: { id: string; platform: Platform }[],
  delivery: { topic: string; webhookId: string | undefined },
  body: unknown,
): Promise<WebhookAnswer> {
  const report = read(() => readSupplierCancellation(senders[0]!.platform, delivery.topic, body));
  if (!report) return IGNORED;
  const found = await cancellations.recordSupplierCancellation({
    sourceStoreIds: senders.map((sender) => sender.id),
    sourceOrderId: report.sourceOrderId,
    reason: report.reason,
    lines: report.lines,
    via: { source: 'webhook', topic: delivery.topic, webhookId: delivery.webhookId ?? null },
  });
  return { syncJobIds: found ? [found.syncJobId] : [] };
}
