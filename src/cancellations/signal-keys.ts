/**
 * The de-duplication keys of cancellation signals (order_cancellations.dedupe_key): a platform's
 * delivery (`webhook:` its webhook id, else `body:` a hash of its topic and bytes) or the divergence
 * watch's one per order (`watch:`).
 */
import { createHash } from 'node:crypto';

/** The key of the signal the divergence watch records for a storefront order it finds cancelled (one per order). */
export const watchSignalKey = (externalOrderId: string): string => `watch:${externalOrderId}`;

/** Whether a signal is the divergence watch's (its key from `watchSignalKey`; a delivery's starts `webhook:` or `body:`). */
export const isWatchSignal = (dedupeKey: string): boolean => dedupeKey.startsWith('watch:');

/** Identifies a delivery for de-duplication: its webhook id, else its topic and exact bytes. */
export function dedupeKeyOf(topic: string, webhookId: string | undefined, rawBody: Buffer): string {
  if (webhookId) return `webhook:${webhookId.slice(0, 200)}`;
  return `body:${createHash('sha256').update(topic).update('\n').update(rawBody).digest('hex')}`;
}
