/**
 * The de-duplication keys of cancellation signals (order_cancellations.dedupe_key): a platform's
 * delivery (`refund:` a platform_a refund's own id, else `webhook:` its webhook id, else `body:` a
 * hash of its topic and bytes), the divergence watch's one per order (`watch:`), the lines the
 * storefront order showed cancelled when it was routed (`listed:`, one per order), the lines a routed
 * order was later listed showing cancelled beyond what its signals account for (`shown:`, the
 * divergence watch's), or the one asking again for the cancellation of a job whose order was found
 * after all (`found:`).
 */
import { createHash } from 'node:crypto';

/** The key of the signal the divergence watch records for a storefront order it finds cancelled (one per order). */
export const watchSignalKey = (externalOrderId: string): string => `watch:${externalOrderId}`;

/** Whether a signal is the divergence watch's (its key from `watchSignalKey`; a delivery's starts `webhook:` or `body:`). */
export const isWatchSignal = (dedupeKey: string): boolean => dedupeKey.startsWith('watch:');

/** The key of the signal routing records for the lines a storefront order shows cancelled (one per order: it is routed once). */
export const listedSignalKey = (externalOrderId: string): string => `listed:${externalOrderId}`;

/** Whether a signal is the one routing recorded from the storefront order (`listedSignalKey`). */
export const isListedSignal = (dedupeKey: string): boolean => dedupeKey.startsWith('listed:');

/**
 * The key of the signal the divergence watch records when a routed storefront order it lists shows
 * more of its lines cancelled than the order's signals account for (`cancelShownLines`): one per
 * quantities the order shows (their hash), so a pass that lists the same order again, or two at once,
 * record it once.
 */
export function shownSignalKey(externalOrderId: string, shown: { sku: string; vendor: string; quantity: number }[]): string {
  const lines = shown.map(({ sku, vendor, quantity }) => [sku, vendor, quantity]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return `shown:${externalOrderId}:${createHash('sha256').update(JSON.stringify(lines)).digest('hex')}`;
}

/** Whether a signal is one of `shownSignalKey`. */
export const isShownSignal = (dedupeKey: string): boolean => dedupeKey.startsWith('shown:');

/**
 * The key of the signal that asks again for the whole-order cancellation of one job, once its supplier
 * order is found after that cancellation ended `not_placed` (src/cancellations/service.ts
 * `cancelFoundOrder`): one per job. It stands for the storefront's own cancellation, for that job
 * only: it is neither applied to the order's other jobs nor taken for a delivery of the storefront's.
 */
export const foundOrderSignalKey = (syncJobId: string): string => `found:${syncJobId}`;

/** Whether a signal is one of `foundOrderSignalKey`. */
export const isFoundOrderSignal = (dedupeKey: string): boolean => dedupeKey.startsWith('found:');

/**
 * Identifies a delivery for de-duplication: the platform's own id of the cancellation when it has
 * one (a platform_a Refund), else its webhook id, else its topic and exact bytes. A platform signs
 * the body only, not X-Platform-Webhook-Id: keyed by the webhook id alone, the signed bytes of one
 * refund sent again under another webhook id were a second refund, and cancelled its lines again.
 */
export function dedupeKeyOf(topic: string, webhookId: string | undefined, rawBody: Buffer, refundId?: string): string {
  if (refundId !== undefined) {
    return refundId.length <= 200 ? `refund:${refundId}` : `refund-sha256:${createHash('sha256').update(refundId).digest('hex')}`;
  }
  if (webhookId) return `webhook:${webhookId.slice(0, 200)}`;
  return `body:${createHash('sha256').update(topic).update('\n').update(rawBody).digest('hex')}`;
}
