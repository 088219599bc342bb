/**
 * The platforms' updated-since order lists (platforms.md), read for the divergence watch: per order
 * its id, the service's reference, when it changed, whether it is cancelled (and why), its status,
 * and the shipments it shows, each shaped as its fulfillments/create webhook would be read, so the
 * watch recognises a shipment a webhook already brought (src/fulfillments/identity.ts).
 */
import { z } from 'zod';
import type { CancelledBefore, SourceFulfillment } from '../orders/types.ts';
import { LIST_PAGE, type PlatformHttpClient, type ResponseHeaders } from './http.ts';
import { cancelledBefore, limitOf, nextLink, pageEntries, readShrinking, timestamp, totalPagesOf, withLimit } from './listing.ts';
import { anyId, distinct, lineText, numericId, optionalText, parsePayload, platformAFulfillmentShipped, stringList, trackingLinks } from './payload.ts';
import { type StoreConnection, type UpdatedOrder, type UpdatedPage } from './types.ts';
import { atPageSize, firstPosition, followByTime, type TimePosition } from './time-paging.ts';
import { platformBCancelReason } from './cancel-webhooks.ts';

export type { UpdatedOrder, UpdatedPage } from './types.ts';

/** The lists' own page sizes: the largest each platform allows. */
export const UPDATED_PAGE_SIZE = { platform_a: 250, platform_b: 100, custom: 100 } as const;

const A_API = '/admin/api/2025-01';
const B_API = '/wp-json/wc/v3';

const metaEntries = z
  .array(z.object({ key: z.string(), value: z.unknown() }))
  .nullish()
  .transform((entries) => entries ?? []);

const platformAFulfillment = z.object({
  id: numericId,
  status: z.string().nullish(),
  tracking_company: optionalText,
  tracking_number: optionalText,
  tracking_numbers: stringList,
  tracking_url: optionalText,
  tracking_urls: stringList,
  // Read apart and leniently (shownCancelledA): the lines a fulfillment shipped.
  line_items: z.unknown(),
});

const platformAOrder = z.object({
  id: numericId,
  updated_at: timestamp(false),
  cancelled_at: z.string().nullish(),
  cancel_reason: optionalText,
  fulfillment_status: optionalText,
  note_attributes: z
    .array(z.object({ name: z.string(), value: z.unknown() }))
    .nullish()
    .transform((entries) => entries ?? []),
  fulfillments: z
    .array(platformAFulfillment)
    .nullish()
    .transform((entries) => entries ?? []),
  // Read apart and leniently (shownCancelledA): a line the watch cannot read must not fail the page.
  line_items: z.unknown(),
});

const platformBOrder = z.object({
  id: numericId,
  status: z.string(),
  date_modified_gmt: timestamp(true),
  meta_data: metaEntries,
});

/**
 * platform_b statuses whose orders have no shipment to read: not paid (`pending`, `failed`), or cancelled
 * (`cancelled`, `refunded`: the supplier's cancellation, recorded as such). Any other status (`processing`,
 * `on-hold`, `completed`, a status a store adds) may carry shipment trackings.
 */
const PLATFORM_B_UNSHIPPED: ReadonlySet<string> = new Set(['pending', 'failed', 'cancelled', 'refunded']);

/** Whether a platform_b order of this status may carry shipment trackings without being `completed` (see PLATFORM_B_UNSHIPPED). */
export const platformBMayHaveShippedOpen = (status: string) => status !== 'completed' && !PLATFORM_B_UNSHIPPED.has(status);

const platformBTracking = z.object({ tracking_provider: optionalText, tracking_number: optionalText, tracking_link: optionalText });

const customOrder = z.object({
  id: anyId,
  reference: optionalText,
  status: z.string(),
  updatedAt: timestamp(true),
  cancelledAt: z.string().nullish(),
  // Read apart and leniently (shownCancelledCustom).
  lines: z.unknown(),
  fulfillments: z
    .array(z.object({ trackingNumbers: stringList, trackingUrls: stringList, carrier: optionalText }))
    .nullish()
    .transform((entries) => entries ?? []),
});

const lineId = z.union([z.number(), z.string()]).nullish();
const count = z.number().int().nonnegative();
const shownLinesA = z.array(z.object({ id: lineId, sku: lineText, vendor: lineText, quantity: count, fulfillable_quantity: count.nullish() }));
const shippedLinesA = z.array(z.object({ id: lineId, sku: lineText, quantity: count }));
const shownLinesCustom = z.array(z.object({ sku: lineText, vendor: lineText, quantity: count, cancelledQuantity: count.nullish() }));

/**
 * What a platform_a order shows cancelled of its lines (not cancelled whole): per line, `quantity`
 * less `fulfillable_quantity` (neither shipped nor cancelled) less what its shipped fulfillments name
 * of the line (by line id, else SKU), so the quantities the service's own tracking pushes fulfilled
 * are not taken for cancelled ones. A shipped fulfillment that names no lines leaves what was shipped
 * unknown: null (nothing is inferred); so are lines the entry does not give readably.
 */
function shownCancelledA(lineItems: unknown, fulfillments: { status?: string | null | undefined; line_items?: unknown }[], updatedAt: Date): CancelledBefore | null {
  const lines = shownLinesA.safeParse(lineItems);
  if (!lines.success) return null;
  const shipped = new Map<string, number>();
  for (const fulfillment of fulfillments) {
    if (!platformAFulfillmentShipped(fulfillment.status)) continue;
    const named = shippedLinesA.safeParse(fulfillment.line_items);
    if (!named.success || named.data.length === 0) return null;
    for (const line of named.data) {
      const key = line.id != null ? `id:${line.id}` : `sku:${line.sku}`;
      shipped.set(key, (shipped.get(key) ?? 0) + line.quantity);
    }
  }
  const cancelled = lines.data.map((line) => {
    const fulfilled = (line.id != null ? shipped.get(`id:${line.id}`) : undefined) ?? shipped.get(`sku:${line.sku}`) ?? 0;
    return { sku: line.sku, vendor: line.vendor, quantity: line.quantity, cancelled: line.fulfillable_quantity == null ? 0 : line.quantity - line.fulfillable_quantity - fulfilled };
  });
  return cancelledBefore(cancelled, updatedAt.toISOString()).cancelledBefore ?? null;
}

/** What a custom order shows cancelled of its lines (its lines' `cancelledQuantity`); null when the lines are not readable. */
function shownCancelledCustom(lines: unknown, updatedAt: Date): CancelledBefore | null {
  const read = shownLinesCustom.safeParse(lines);
  if (!read.success) return null;
  return cancelledBefore(read.data.map((line) => ({ ...line, cancelled: line.cancelledQuantity ?? 0 })), updatedAt.toISOString()).cancelledBefore ?? null;
}

const textValue = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);

/**
 * platform_a: `updated_at_min`, then the `Link` header's `rel="next"` URL as given. A page whose answer
 * is over the list page's bound is read again with a smaller `limit` (readShrinking); the next URL the
 * platform gives keeps that limit.
 */
export async function listUpdatedPlatformA(http: PlatformHttpClient, store: StoreConnection, since: Date, cursor: string | null): Promise<UpdatedPage> {
  const read = (body: unknown, headers: ResponseHeaders): UpdatedPage => {
    const list = parsePayload(z.object({ orders: z.unknown() }), body, 'platform_a updated order list').orders;
    return { orders: pageEntries(list, 'platform_a updated order list').map(readPlatformA), next: nextLink(headers('link')) };
  };
  const largest = UPDATED_PAGE_SIZE.platform_a;
  if (cursor !== null) {
    const size = limitOf(cursor, largest);
    return (await readShrinking(size, (asked) => http.getUrl(store, asked < size ? withLimit(cursor, asked) : cursor, read, LIST_PAGE))).page;
  }
  return (
    await readShrinking(largest, (asked) => {
      const query = new URLSearchParams({ status: 'any', updated_at_min: since.toISOString(), limit: String(asked) });
      return http.get(store, `${A_API}/orders.json?${query}`, read, LIST_PAGE);
    })
  ).page;
}

function readPlatformA(entry: unknown): UpdatedOrder {
  const order = parsePayload(platformAOrder, entry, 'platform_a order in the updated list');
  return {
    externalOrderId: order.id,
    syncReference: textValue(order.note_attributes.find((attribute) => attribute.name === 'sync_reference')?.value),
    updatedAt: order.updated_at,
    cancelled: !!order.cancelled_at,
    cancelReason: order.cancel_reason,
    status: order.cancelled_at ? 'cancelled' : (order.fulfillment_status ?? 'open'),
    // A cancelled (or failed) fulfillment shipped nothing: neither pushed nor recorded.
    shipments: order.fulfillments.filter((fulfillment) => platformAFulfillmentShipped(fulfillment.status)).map((fulfillment) => ({
      sourceOrderId: order.id,
      fulfillmentId: fulfillment.id,
      tracking: {
        numbers: distinct([fulfillment.tracking_number, ...fulfillment.tracking_numbers]),
        urls: trackingLinks([fulfillment.tracking_url, ...fulfillment.tracking_urls]),
        company: fulfillment.tracking_company,
      },
    })),
    cancelledLines: order.cancelled_at ? null : shownCancelledA(order.line_items, order.fulfillments, order.updated_at),
  };
}

/** Where platform_b's updated list goes on, and its page size (smaller than the largest after a page too large). */
const platformBPosition = z.object({ after: z.number().int(), page: z.number().int().min(1), seen: z.array(z.string()), size: z.number().int().min(1).max(UPDATED_PAGE_SIZE.platform_b).optional() });

function readPlatformBPosition(cursor: string): TimePosition & { size?: number | undefined } {
  let parsed;
  try {
    parsed = platformBPosition.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) throw new RangeError('invalid platform_b list position');
  return parsed.data;
}

const writePlatformBPosition = (position: TimePosition, size: number) =>
  Buffer.from(JSON.stringify(size === UPDATED_PAGE_SIZE.platform_b ? position : { ...position, size })).toString('base64url');

/**
 * platform_b: `modified_after&orderby=modified`, followed by the time of the last change listed
 * (src/platforms/time-paging.ts). A page whose answer is over the list page's bound is read again
 * with a smaller `per_page` (readShrinking); the position handed on keeps that size.
 */
export async function listUpdatedPlatformB(http: PlatformHttpClient, store: StoreConnection, since: Date, cursor: string | null): Promise<UpdatedPage> {
  const { size: given, ...position } = cursor === null ? { ...firstPosition(since), size: undefined } : readPlatformBPosition(cursor);
  const size = given ?? UPDATED_PAGE_SIZE.platform_b;
  const read = (asked: number) => {
    const at = atPageSize(position, size, asked);
    const query = new URLSearchParams({ modified_after: new Date(at.after).toISOString(), per_page: String(asked), page: String(at.page), orderby: 'modified', order: 'asc' });
    return http.get(store, `${B_API}/orders?${query}`, (body, headers) => {
      const totalPages = totalPagesOf(headers, 'platform_b updated order list');
      const listed = pageEntries(body, 'platform_b updated order list').map(readPlatformB);
      const last = totalPages === null ? listed.length < asked : at.page >= totalPages;
      const { fresh, next } = followByTime(at, listed, (order) => ({ id: order.externalOrderId, time: order.updatedAt }), last);
      return { orders: fresh, next: next && writePlatformBPosition(next, asked) };
    }, LIST_PAGE);
  };
  return (await readShrinking(size, read)).page;
}

function readPlatformB(entry: unknown): UpdatedOrder {
  const order = parsePayload(platformBOrder, entry, 'platform_b order in the updated list');
  const cancelled = order.status === 'cancelled' || order.status === 'refunded';
  return {
    externalOrderId: order.id,
    syncReference: textValue(order.meta_data.find((meta) => meta.key === 'sync_reference')?.value),
    updatedAt: order.date_modified_gmt,
    cancelled,
    cancelReason: order.status === 'cancelled' || order.status === 'refunded' ? platformBCancelReason(order.status) : null,
    status: order.status,
    // Tracking is in the order's shipment trackings, read apart: a supplier can add it without completing
    // the order (`processing`, `on-hold`, or a status of its own), so only an order that cannot have shipped is not read.
    shipments: PLATFORM_B_UNSHIPPED.has(order.status) ? [] : null,
  };
}

/** platform_b: `GET /orders/{id}/shipment-trackings`, each tracking read as its fulfillments/create webhook. */
export function listShipmentsPlatformB(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<SourceFulfillment[]> {
  return http.get(store, `${B_API}/orders/${encodeURIComponent(orderId)}/shipment-trackings`, (body) =>
    pageEntries(body, 'platform_b shipment trackings').flatMap((entry) => {
      const tracking = parsePayload(platformBTracking, entry, 'platform_b shipment tracking');
      if (tracking.tracking_number === null) return [];
      return [{ sourceOrderId: orderId, fulfillmentId: null, tracking: { numbers: [tracking.tracking_number], urls: trackingLinks([tracking.tracking_link]), company: tracking.tracking_provider } }];
    }),
  );
}

/** Where custom's updated list goes on: the platform's cursor, and the page size when smaller than the largest. */
const customPosition = z.object({ cursor: z.string().min(1), size: z.number().int().min(1).max(UPDATED_PAGE_SIZE.custom).optional() });

function readCustomPosition(cursor: string): z.infer<typeof customPosition> {
  let parsed;
  try {
    parsed = customPosition.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) throw new RangeError('invalid custom list position');
  return parsed.data;
}

const writeCustomPosition = (cursor: string, size: number) =>
  Buffer.from(JSON.stringify(size === UPDATED_PAGE_SIZE.custom ? { cursor } : { cursor, size })).toString('base64url');

/**
 * custom: `updatedAfter`, then each answer's `nextCursor` as `cursor`. A page whose answer is over the
 * list page's bound is read again with a smaller `limit` (readShrinking); the position handed on (the
 * platform's cursor) keeps that size.
 */
export async function listUpdatedCustom(http: PlatformHttpClient, store: StoreConnection, since: Date, cursor: string | null): Promise<UpdatedPage> {
  const position = cursor === null ? null : readCustomPosition(cursor);
  const read = (asked: number) => {
    const query = new URLSearchParams({ updatedAfter: since.toISOString(), limit: String(asked) });
    if (position !== null) query.set('cursor', position.cursor);
    return http.get(store, `/orders?${query}`, (body) => {
      const page = parsePayload(z.object({ data: z.unknown(), nextCursor: z.string().min(1).nullish() }), body, 'custom updated order list');
      return { orders: pageEntries(page.data, 'custom updated order list').map(readCustom), next: page.nextCursor ? writeCustomPosition(page.nextCursor, asked) : null };
    }, LIST_PAGE);
  };
  return (await readShrinking(position?.size ?? UPDATED_PAGE_SIZE.custom, read)).page;
}

function readCustom(entry: unknown): UpdatedOrder {
  const order = parsePayload(customOrder, entry, 'custom order in the updated list');
  return {
    externalOrderId: order.id,
    syncReference: order.reference,
    updatedAt: order.updatedAt,
    cancelled: order.status === 'cancelled' || !!order.cancelledAt,
    cancelReason: null,
    status: order.status,
    // Read as the custom fulfillments/create webhook is: it carries no fulfillment id.
    shipments: order.fulfillments.map((fulfillment) => ({
      sourceOrderId: order.id,
      fulfillmentId: null,
      tracking: { numbers: distinct(fulfillment.trackingNumbers), urls: trackingLinks(fulfillment.trackingUrls), company: fulfillment.carrier },
    })),
    cancelledLines: order.status === 'cancelled' || order.cancelledAt ? null : shownCancelledCustom(order.lines, order.updatedAt),
  };
}

/** platform_a: an order's shipments, from the order itself (its list entry carries them already). */
export async function listShipmentsPlatformA(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<SourceFulfillment[]> {
  return (await readListedPlatformA(http, store, orderId)).shipments ?? [];
}

/** custom: an order's shipments, from the order itself (its list entry carries them already). */
export async function listShipmentsCustom(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<SourceFulfillment[]> {
  return (await readListedCustom(http, store, orderId)).shipments ?? [];
}

/**
 * One order as its updated-list entry reads it (its reference, status and shipments), read by id:
 * the shipments of an order the watch lists (platform_a, custom), and whose order a fulfillment
 * webhook names when only its reference can tell (src/webhooks/service.ts).
 */
export function readListedPlatformA(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<UpdatedOrder> {
  return http.get(store, `${A_API}/orders/${encodeURIComponent(orderId)}.json`, (body) => readPlatformA(parsePayload(z.object({ order: z.unknown() }), body, 'platform_a order response').order));
}

/** platform_b: its tracking is not in the order (`shipments` null unless it cannot have shipped): listShipmentsPlatformB reads it. */
export function readListedPlatformB(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<UpdatedOrder> {
  return http.get(store, `${B_API}/orders/${encodeURIComponent(orderId)}`, readPlatformB);
}

export function readListedCustom(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<UpdatedOrder> {
  return http.get(store, `/orders/${encodeURIComponent(orderId)}`, readCustom);
}
