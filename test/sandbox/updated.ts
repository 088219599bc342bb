/**
 * What the divergence watch reads from the platforms (spec/platforms.md): every order's update time
 * (platform_a `updated_at`, platform_b `date_modified_gmt`, custom `updatedAt`), bumped whenever
 * the sandbox changes the order; the updated-since lists; platform_b's shipment trackings; and a
 * supplier shipping an order on its own, with no webhook sent.
 */
import { randomUUID } from 'node:crypto';
import type { Platform } from '../../src/orders/types.ts';
import { NOT_FOUND, Refusal } from './http.ts';
import { buildFulfillmentPayload, gmt, type JsonObject } from './payloads.ts';
import type { Reply, StoreState } from './state.ts';

const UPDATED_FIELD = { platform_a: 'updated_at', platform_b: 'date_modified_gmt', custom: 'updatedAt' } as const;

/** Strictly increasing update times, so two changes never share one (platform_b's whole seconds aside). */
let lastUpdate = 0;

function nextUpdateTime(): number {
  lastUpdate = Math.max(Date.now(), lastUpdate + 1);
  return lastUpdate;
}

function formatUpdate(platform: Platform, time: number): string {
  const iso = new Date(time).toISOString();
  return platform === 'platform_b' ? gmt(iso) : iso;
}

/** The order's update time in milliseconds (its creation time when it has none). */
export function orderUpdatedAt(platform: Platform, order: JsonObject): number {
  const value = order[UPDATED_FIELD[platform]];
  if (typeof value !== 'string') return Number.NaN;
  return Date.parse(platform === 'platform_b' && !/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? `${value}Z` : value);
}

/**
 * The order as it is saved: its update time bumped to now, unless the caller set one of its own
 * (a seeded order with a chosen `updated_at`, differing from the stored version's).
 */
export function stampUpdated(platform: Platform, order: JsonObject, previous: JsonObject | undefined): JsonObject {
  const field = UPDATED_FIELD[platform];
  const given = order[field];
  if (typeof given === 'string' && (previous === undefined || previous[field] !== given)) return order;
  return { ...order, [field]: formatUpdate(platform, nextUpdateTime()) };
}

/** platform_b's shipment trackings of each store, by order id. */
const trackingsByStore = new WeakMap<StoreState, Map<string, JsonObject[]>>();

function trackingsOf(store: StoreState, orderId: string): JsonObject[] {
  let byOrder = trackingsByStore.get(store);
  if (!byOrder) trackingsByStore.set(store, (byOrder = new Map()));
  let trackings = byOrder.get(orderId);
  if (!trackings) byOrder.set(orderId, (trackings = []));
  return trackings;
}

/** `GET /orders/{id}/shipment-trackings` (platform_b). */
export function shipmentTrackingsReply(store: StoreState, orderId: string): Reply {
  if (store.order('platform_b', orderId) === undefined) return NOT_FOUND;
  return { status: 200, body: trackingsOf(store, orderId) };
}

export interface Shipment {
  trackingNumbers: string[];
  trackingUrls?: string[];
  company?: string;
  /**
   * The supplier adds the tracking without completing the order: platform_b's order stays as it was
   * (`processing`), platform_a's becomes `partial`, custom's stays `open`.
   */
  keepOpen?: boolean;
}

/**
 * The supplier ships an order itself and no webhook is sent: the order shows the shipment (platform_a
 * a fulfillment and `fulfillment_status`, platform_b status `completed` and shipment trackings,
 * custom status `fulfilled` and a fulfillment; with `keepOpen`, the tracking without the status) and
 * its update time moves. Returns the bodies its
 * fulfillments/create webhooks would carry (platform_b: one per tracking number), for a late delivery.
 */
export function shipStoredOrder(store: StoreState, platform: Platform, id: string, shipment: Shipment, nextId: () => number): JsonObject[] {
  const order = store.order(platform, id);
  if (order === undefined) throw new Error(`no ${platform} order ${id}`);
  const urls = shipment.trackingUrls ?? [];
  const company = shipment.company ?? null;
  switch (platform) {
    case 'platform_a': {
      const fulfillment = buildFulfillmentPayload('platform_a', { orderId: id, fulfillmentId: nextId(), trackingNumbers: shipment.trackingNumbers, trackingUrls: urls, company });
      const fulfillments = [...((order.fulfillments as JsonObject[] | undefined) ?? []), fulfillment];
      store.saveOrder(platform, { ...order, fulfillments, fulfillment_status: shipment.keepOpen ? 'partial' : 'fulfilled' });
      return [fulfillment];
    }
    case 'platform_b': {
      const trackings = trackingsOf(store, id);
      const payloads = shipment.trackingNumbers.map((number, index) => {
        trackings.push({
          tracking_id: randomUUID().replaceAll('-', ''),
          tracking_provider: company ?? '',
          tracking_number: number,
          tracking_link: urls[index] ?? '',
          date_shipped: new Date().toISOString().slice(0, 10),
        });
        return buildFulfillmentPayload('platform_b', { orderId: id, trackingNumbers: [number], trackingUrls: urls[index] ? [urls[index]] : [], company });
      });
      store.saveOrder(platform, shipment.keepOpen ? order : { ...order, status: 'completed' });
      return payloads;
    }
    case 'custom': {
      const fulfillment = { id: `ful_${nextId()}`, trackingNumbers: shipment.trackingNumbers, trackingUrls: urls, carrier: company, createdAt: new Date().toISOString() };
      const fulfillments = [...((order.fulfillments as JsonObject[] | undefined) ?? []), fulfillment];
      store.saveOrder(platform, { ...order, ...(!shipment.keepOpen && { status: 'fulfilled' }), fulfillments });
      return [buildFulfillmentPayload('custom', { orderId: id, trackingNumbers: shipment.trackingNumbers, trackingUrls: urls, company })];
    }
  }
}

/**
 * A fulfillment added to one of the store's orders through the API (`POST …/fulfillments`) shows on
 * that order as a platform shows it: platform_a in the order's `fulfillments` (its id the one the
 * answer gave), platform_b as a shipment tracking per number (`tracking_id` the answer's for the
 * first), custom in the order's `fulfillments`. No status changes: the store's owner decides that.
 */
export function showAddedFulfillment(store: StoreState, platform: Platform, orderId: string, added: { id: string | number; trackingNumbers: string[]; trackingUrls: string[]; company: string | null }): void {
  const order = store.order(platform, orderId);
  if (order === undefined) return;
  switch (platform) {
    case 'platform_a': {
      const fulfillment = buildFulfillmentPayload('platform_a', { orderId, fulfillmentId: added.id as number, trackingNumbers: added.trackingNumbers, trackingUrls: added.trackingUrls, company: added.company });
      store.saveOrder(platform, { ...order, fulfillments: [...((order.fulfillments as JsonObject[] | undefined) ?? []), fulfillment] });
      return;
    }
    case 'platform_b': {
      trackingsOf(store, orderId).push(
        ...added.trackingNumbers.map((number, index) => ({
          tracking_id: String(added.id),
          tracking_provider: added.company ?? '',
          tracking_number: number,
          tracking_link: added.trackingUrls[index] ?? '',
          date_shipped: new Date().toISOString().slice(0, 10),
        })),
      );
      store.saveOrder(platform, { ...order });
      return;
    }
    case 'custom': {
      const fulfillment = { id: String(added.id), trackingNumbers: added.trackingNumbers, trackingUrls: added.trackingUrls, carrier: added.company, createdAt: new Date().toISOString() };
      store.saveOrder(platform, { ...order, fulfillments: [...((order.fulfillments as JsonObject[] | undefined) ?? []), fulfillment] });
      return;
    }
  }
}

/** Which list a GET of the orders path asks for: the updated-since list when it carries that filter. */
export function isUpdatedList(platform: Platform, query: URLSearchParams): boolean {
  switch (platform) {
    case 'platform_a':
      return query.has('updated_at_min') || (query.has('page_info') && readCursor(query.get('page_info')!)?.updated === true);
    case 'platform_b':
      return query.has('modified_after') || query.get('orderby') === 'modified';
    case 'custom':
      return query.has('updatedAfter') || (query.has('cursor') && readCursor(query.get('cursor')!)?.updated === true);
  }
}

/** Where an updated list continues: after the order updated at `time` with key `key`. */
interface UpdatedCursor {
  updated: true;
  since: number;
  inclusive: boolean;
  after: [time: number, key: string] | null;
}

function writeCursor(cursor: UpdatedCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function readCursor(text: string): UpdatedCursor | null {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as UpdatedCursor;
    return parsed && parsed.updated === true ? parsed : null;
  } catch {
    return null;
  }
}

function badRequest(message: string): Reply {
  return { status: 400, body: { errors: message } };
}

function time(query: URLSearchParams, name: string): number {
  const value = query.get(name);
  const parsed = value === null ? Number.NaN : Date.parse(value);
  if (Number.isNaN(parsed)) throw new Refusal(badRequest(`${name} must be an ISO-8601 date-time`));
  return parsed;
}

function size(query: URLSearchParams, name: string, max: number, store: StoreState): number {
  const value = Number(query.get(name) ?? '50');
  if (!Number.isInteger(value) || value < 1 || value > max) throw new Refusal(badRequest(`${name} must be between 1 and ${max}`));
  return Math.min(value, store.listPageSize ?? value);
}

/** The store's orders by update time (ties by id), from a position. */
function updatedOrders(store: StoreState, platform: Platform, since: number, inclusive: boolean, after: UpdatedCursor['after']) {
  return store
    .listOrders(platform)
    .map(({ order }) => ({ order, time: orderUpdatedAt(platform, order), key: String(order.id) }))
    .filter(({ time: t }) => (inclusive ? t >= since : t > since))
    .filter(({ time: t, key }) => after === null || t > after[0] || (t === after[0] && key > after[1]))
    .sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** One page of an updated-since list, paged the way the platform pages. */
export function updatedListReply(store: StoreState, platform: Platform, query: URLSearchParams, baseUrl: string): Reply {
  switch (platform) {
    case 'platform_a': {
      const limit = size(query, 'limit', 250, store);
      let cursor: UpdatedCursor;
      if (query.has('page_info')) {
        const filters = [...query.keys()].filter((name) => name !== 'page_info' && name !== 'limit');
        if (filters.length > 0) return badRequest(`page_info cannot be combined with ${filters.join(', ')}`);
        const read = readCursor(query.get('page_info')!);
        if (!read) return badRequest('invalid page_info');
        cursor = read;
      } else {
        cursor = { updated: true, since: time(query, 'updated_at_min'), inclusive: true, after: null };
      }
      const matching = updatedOrders(store, platform, cursor.since, cursor.inclusive, cursor.after);
      const page = matching.slice(0, limit);
      const headers: Record<string, string> = {};
      const last = page.at(-1);
      if (matching.length > limit && last) {
        const next = new URLSearchParams({ page_info: writeCursor({ ...cursor, after: [last.time, last.key] }), limit: String(limit) });
        headers.Link = `<${baseUrl}/admin/api/2025-01/orders.json?${next}>; rel="next"`;
      }
      return { status: 200, body: { orders: page.map(({ order }) => order) }, headers };
    }
    case 'platform_b': {
      if (query.get('orderby') !== 'modified' || query.get('order') !== 'asc') return badRequest('the sandbox lists changed orders only with orderby=modified&order=asc');
      const perPage = size(query, 'per_page', 100, store);
      const page = Number(query.get('page') ?? '1');
      if (!Number.isInteger(page) || page < 1) return badRequest('page must be a positive integer');
      // modified_after compares whole seconds, as the platform's GMT times have no fraction.
      const matching = updatedOrders(store, platform, Math.floor(time(query, 'modified_after') / 1000) * 1000, false, null);
      const orders = matching.slice((page - 1) * perPage, page * perPage).map(({ order }) => order);
      return { status: 200, body: orders, headers: { 'X-WP-Total': String(matching.length), 'X-WP-TotalPages': String(Math.ceil(matching.length / perPage)) } };
    }
    case 'custom': {
      const limit = size(query, 'limit', 100, store);
      const given = query.get('cursor');
      const cursor = given === null ? { updated: true as const, since: time(query, 'updatedAfter'), inclusive: false, after: null } : readCursor(given);
      if (!cursor) return badRequest('invalid cursor');
      const matching = updatedOrders(store, platform, cursor.since, cursor.inclusive, cursor.after);
      const page = matching.slice(0, limit);
      const last = page.at(-1);
      const nextCursor = matching.length > limit && last ? writeCursor({ ...cursor, after: [last.time, last.key] }) : null;
      return { status: 200, body: { data: page.map(({ order }) => order), nextCursor } };
    }
  }
}
