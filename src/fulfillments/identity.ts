import { createHash } from 'node:crypto';
import type { SourceFulfillment } from '../orders/types.ts';
import { isStorableId } from '../shared/text.ts';

/** The two keys a supplier's fulfillment is recognised by when it is delivered again. */
export interface FulfillmentKeys {
  /** What the fulfillment is: the platform's fulfillment id, else the order and its tracking. */
  dedupeKey: string;
  /** The X-Platform-Webhook-Id it came under (redeliveries of one event repeat it), if any. */
  webhookId: string | null;
  /**
   * For a fulfillment the platform names by id (platform_a): the keys of every record of that
   * fulfillment, so tracking numbers added to it later (the supplier fulfils first and adds the
   * carrier's number after) are recognised as new while the numbers already recorded are not.
   * `dedupeKey` is its first record's key; `addedPrefix` begins the keys of the records of numbers
   * added later (`addedNumbersKey`).
   */
  platformFulfillment?: { addedPrefix: string } | undefined;
}

/** `fulfillments.dedupe_key` and `webhook_id` are varchar(200). */
const KEY_MAX_LENGTH = 200;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A key as it is when short and storable, else its hash: never a write that fails. */
function keyOf(prefix: string, value: string): string {
  const key = `${prefix}:${value}`;
  return key.length <= KEY_MAX_LENGTH && isStorableId(value, KEY_MAX_LENGTH) ? key : `${prefix}-sha256:${sha256(value)}`;
}

/**
 * A fulfillment is the same one again when it arrives under the same webhook id (a redelivery, its
 * JSON written differently or not), or when it is the same fulfillment: the same platform
 * fulfillment id, or, on platforms that send none, the same order with the same tracking numbers
 * (their order and the JSON's key order do not matter), or without numbers the same links and
 * carrier. Not the raw bytes: a redelivery with its keys reordered used to notify the customer twice.
 */
export function fulfillmentKeys(fulfillment: SourceFulfillment, webhookId: string | undefined): FulfillmentKeys {
  const { numbers, urls, company } = fulfillment.tracking;
  const sorted = (values: string[]) => [...values].sort();
  const identity = fulfillment.fulfillmentId
    ? keyOf('fulfillment', fulfillment.fulfillmentId)
    : `tracking:${sha256(JSON.stringify([fulfillment.sourceOrderId, sorted(numbers), numbers.length > 0 ? [] : sorted(urls), numbers.length > 0 ? null : company]))}`;
  const trimmed = webhookId?.trim();
  return {
    dedupeKey: identity,
    webhookId: trimmed ? keyOf('webhook', trimmed) : null,
    ...(fulfillment.fulfillmentId && { platformFulfillment: { addedPrefix: addedPrefixOf(fulfillment.fulfillmentId) } }),
  };
}

/** `fulfillment-added:<sha256 of the platform's fulfillment id>:`: fixed length, whatever the id. */
const addedPrefixOf = (fulfillmentId: string) => `fulfillment-added:${sha256(fulfillmentId)}:`;

/**
 * The key of the record of tracking numbers added to a fulfillment the platform names by id, after
 * its first record: its prefix, then the hash of all the numbers it shows now (their order does not
 * matter). 145 characters, within `dedupe_key`'s 200.
 */
export function addedNumbersKey(platformFulfillment: { addedPrefix: string }, numbers: string[]): string {
  return `${platformFulfillment.addedPrefix}${sha256(JSON.stringify([...numbers].sort()))}`;
}
