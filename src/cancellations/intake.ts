import type { OrderCancelling } from '../orders/port.ts';
import { EXTERNAL_ORDER_ID, type Platform } from '../orders/types.ts';
import { readStorefrontCancellation, readSupplierCancellation } from '../platforms/cancel-webhooks.ts';
import { PayloadError } from '../platforms/types.ts';
import { validationFailed } from '../shared/errors.ts';
import { dedupeKeyOf } from './signal-keys.ts';
import type { SupplierCancellations } from './service.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';

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

/** A supplier delivery as the platform of some of its senders reads it. */
export interface SenderReading<S, T> {
  senders: S[];
  value: T;
}

/**
 * A supplier's delivery read by each of its senders' platforms. The records whose secret signed it
 * (one supplier store, shared by several resellers) each say which platform the supplier is on, and
 * a reseller can say it wrongly: the delivery is read once per platform named, and the records of a
 * platform that cannot read it (one the supplier's deliveries are not from) are left out, so one
 * reseller's mistaken record never makes the others' tracking or cancellation unreadable. 400
 * validation_failed (the first platform's reason) only when no sender's platform reads it.
 */
export function readBySenderPlatform<S extends { platform: Platform }, T>(senders: S[], reader: (platform: Platform) => T): SenderReading<S, T>[] {
  const byPlatform = new Map<Platform, S[]>();
  for (const sender of senders) byPlatform.set(sender.platform, [...(byPlatform.get(sender.platform) ?? []), sender]);
  const readings: SenderReading<S, T>[] = [];
  let unreadable: PayloadError | undefined;
  for (const [platform, group] of byPlatform) {
    try {
      readings.push({ senders: group, value: reader(platform) });
    } catch (error) {
      if (!(error instanceof PayloadError)) throw error;
      unreadable ??= error;
    }
  }
  if (readings.length === 0 && unreadable) throw validationFailed(unreadable.path ?? 'body', unreadable.message);
  return readings;
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

/**
 * The job that placed a supplier order, among these senders' (the webhooks' port `JobsBySourceOrder`:
 * the senders' own jobs first, then their former records', src/source-stores/former-records.ts).
 */
export interface SupplierOrderJobs {
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<SyncJob | null>;
}

/**
 * A supplier's own cancellation webhook, verified: recorded on the job that placed the order, if
 * any (`jobs`: a job of the senders, or of a deleted record of the same supplier that they replaced),
 * as each sender's platform reads it (`readBySenderPlatform`); held for a job in doubt when none has
 * recorded the order yet (`recordSupplierCancellation`).
 */
export async function receiveSupplierCancellation(
  cancellations: SupplierCancellations,
  jobs: SupplierOrderJobs,
  senders: { id: string; platform: Platform; ownerId: string; resellerStoreId: string }[],
  delivery: { topic: string; webhookId: string | undefined },
  body: unknown,
): Promise<WebhookAnswer> {
  const readings = readBySenderPlatform(senders, (platform) => readSupplierCancellation(platform, delivery.topic, body));
  if (readings.every(({ value }) => !value)) return IGNORED;
  const syncJobIds: string[] = [];
  for (const { senders: group, value: report } of readings) {
    if (!report) continue;
    const sourceStoreIds = group.map((sender) => sender.id);
    // The job that placed the order: the senders', or their former records' (src/source-stores/former-records.ts).
    const syncJob = await jobs.findBySourceOrder(sourceStoreIds, report.sourceOrderId);
    const found = await cancellations.recordSupplierCancellation({
      sourceStoreIds,
      ...(syncJob && { syncJob }),
      sourceOrderId: report.sourceOrderId,
      reason: report.reason,
      lines: report.lines,
      via: { source: 'webhook', topic: delivery.topic, webhookId: delivery.webhookId ?? null },
      // No job has the order yet but one of theirs is in doubt: held for them until it learns the order.
      senders: group.map(({ id, ownerId, resellerStoreId }) => ({ id, ownerId, resellerStoreId })),
    });
    if (found) syncJobIds.push(found.syncJobId);
  }
  return { syncJobIds };
}
