/** The three platforms' APIs as the sandbox plays them (spec/platforms.md). */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { fromMinorUnits, toMinorUnits } from '../../src/money.ts';
import type { Platform } from '../../src/orders/types.ts';
import { NOT_FOUND, Refusal, accept, header, jsonBody } from './http.ts';
import { buildFulfillmentPayload, buildOrderPayload, type JsonObject } from './payloads.ts';
import type { Reply, SandboxState, StoreState } from './state.ts';
import { isUpdatedList, shipmentTrackingsReply, showAddedFulfillment, updatedListReply } from './updated.ts';
import { answerCancelCall } from './cancellations.ts';

export interface PlatformRequest {
  shopDomain: string;
  method: string;
  /** Path below the shop domain, without the query string. */
  path: string;
  query: URLSearchParams;
  request: IncomingMessage;
  text: string;
}

interface NewObject {
  id: number;
  shopDomain: string;
  createdAt: string;
}

interface CreatedFulfillment {
  id: number | string;
  payload: JsonObject;
  reply: unknown;
}

interface SimulatedPlatform {
  platform: Platform;
  /** Paths this platform serves. */
  claims: RegExp;
  /** GET; captures the order id. */
  orderPath: RegExp;
  /** POST creates an order. */
  ordersPath: RegExp;
  /** POST; captures the order id. */
  fulfillmentsPath: RegExp;
  token(request: IncomingMessage): string | undefined;
  orderReply(order: JsonObject): unknown;
  /** GET on ordersPath: one page of the store's orders, oldest first, with this platform's paging. */
  listOrders(store: StoreState, call: PlatformRequest): Reply;
  /** Builds the platform's order from a create request; throws Refusal when it would reject it. */
  placeOrder(body: unknown, context: NewObject): JsonObject;
  fulfill(body: unknown, order: JsonObject, context: NewObject): CreatedFulfillment;
}

const decimal = z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string');
const quantity = z.number().int().positive();
const currency = z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code');

/** What each simulated platform accepts when an order is placed or fulfilled: built once, not per call. */
const platformAOrderRequest = z.object({
  order: z.object({
    line_items: z
      .array(z.object({ sku: z.string(), title: z.string(), quantity, price: decimal }))
      .min(1, "can't be blank"),
    email: z.string().optional(),
    shipping_address: z.record(z.unknown()).optional(),
    currency: currency.optional(),
    tags: z.string().optional(),
    note_attributes: z.array(z.object({ name: z.string(), value: z.string() })).optional(),
  }),
});
const platformAFulfillmentRequest = z.object({
  fulfillment: z.object({
    tracking_number: z.string().optional(),
    tracking_numbers: z.array(z.string()).optional(),
    tracking_url: z.string().optional(),
    tracking_urls: z.array(z.string()).optional(),
    tracking_company: z.string().optional(),
    notify_customer: z.boolean().optional(),
  }),
});
const platformBOrderRequest = z.object({
  status: z.string().optional(),
  line_items: z
    .array(z.object({ sku: z.string(), name: z.string(), quantity, total: decimal }))
    .min(1, 'must have at least one line'),
  shipping: z.record(z.unknown()).optional(),
  billing: z.object({ email: z.string().optional() }).passthrough().optional(),
  currency: currency.optional(),
  meta_data: z.array(z.object({ key: z.string(), value: z.unknown() })).optional(),
});
const platformBTrackingRequest = z.object({
  tracking_provider: z.string().optional(),
  tracking_number: z.string().min(1),
  tracking_link: z.string().optional(),
});
const customOrderRequest = z.object({
  reference: z.string().min(1),
  currency,
  lines: z
    .array(z.object({ sku: z.string(), title: z.string(), quantity, unitPrice: decimal }))
    .min(1, 'must have at least one line'),
  shippingAddress: z.record(z.unknown()).nullish(),
  email: z.string().nullish(),
});
const customFulfillmentRequest = z.object({
  trackingNumbers: z.array(z.string()).min(1, 'must have at least one tracking number'),
  trackingUrls: z.array(z.string()).optional(),
  carrier: z.string().optional(),
  notifyCustomer: z.boolean().optional(),
});

const platformA: SimulatedPlatform = {
  platform: 'platform_a',
  claims: /^\/admin\/api\/2025-01\//,
  orderPath: /^\/admin\/api\/2025-01\/orders\/([^/]+)\.json$/,
  ordersPath: /^\/admin\/api\/2025-01\/orders\.json$/,
  fulfillmentsPath: /^\/admin\/api\/2025-01\/orders\/([^/]+)\/fulfillments\.json$/,
  token: (request) => header(request, 'x-platform-access-token'),
  orderReply: (order) => ({ order }),
  listOrders(store, call) {
    const query = listQuery(call.query, { limit: 250 });
    let position: ListPosition;
    if (query.has('page_info')) {
      // With page_info the platform refuses every other filter: the cursor carries them.
      const filters = [...query.keys()].filter((name) => name !== 'page_info' && name !== 'limit');
      if (filters.length > 0) return badRequest(`page_info cannot be combined with ${filters.join(', ')}`);
      position = readCursor(query.get('page_info')!);
    } else {
      const min = optionalTime(query, 'created_at_min');
      position = { since: min ?? -Infinity, inclusive: true, offset: 0 };
    }
    if (!query.has('page_info')) position.status = query.get('status') ?? 'open';
    const page = listPage(store, 'platform_a', position, pageSize(store, query, 'limit', 250));
    const headers: Record<string, string> = {};
    if (page.next) {
      const next = new URLSearchParams({ page_info: writeCursor(page.next), limit: query.get('limit') ?? '50' });
      headers.Link = `<${storeBaseUrl(call)}/admin/api/2025-01/orders.json?${next}>; rel="next"`;
    }
    return { status: 200, body: { orders: page.orders }, headers };
  },
  placeOrder(body, { id, shopDomain, createdAt }) {
    const { order } = accept(platformAOrderRequest, body);
    const lines = order.line_items.map((line) => ({ ...line, vendor: shopDomain }));
    const built = buildOrderPayload('platform_a', {
      id,
      currency: order.currency,
      email: order.email,
      shippingAddress: null,
      lines,
      createdAt,
    });
    return {
      ...built,
      shipping_address: order.shipping_address ?? null,
      tags: order.tags ?? '',
      note_attributes: order.note_attributes ?? [],
    };
  },
  fulfill(body, order, { id }) {
    const { fulfillment } = accept(platformAFulfillmentRequest, body);
    const payload = buildFulfillmentPayload('platform_a', {
      orderId: String(order.id),
      fulfillmentId: id,
      trackingNumbers: distinct([fulfillment.tracking_number, ...(fulfillment.tracking_numbers ?? [])]),
      trackingUrls: distinct([fulfillment.tracking_url, ...(fulfillment.tracking_urls ?? [])]),
      company: fulfillment.tracking_company,
    });
    return { id, payload, reply: { fulfillment: payload } };
  },
};

const platformB: SimulatedPlatform = {
  platform: 'platform_b',
  claims: /^\/wp-json\/wc\/v3\//,
  orderPath: /^\/wp-json\/wc\/v3\/orders\/([^/]+)$/,
  ordersPath: /^\/wp-json\/wc\/v3\/orders$/,
  fulfillmentsPath: /^\/wp-json\/wc\/v3\/orders\/([^/]+)\/shipment-trackings$/,
  token: bearerToken,
  orderReply: (order) => order,
  listOrders(store, call) {
    const query = listQuery(call.query, { per_page: 100 });
    if ((query.get('orderby') ?? 'date') !== 'date' || (query.get('order') ?? 'desc') !== 'asc') {
      return badRequest('the sandbox lists orders only with orderby=date&order=asc');
    }
    const pageNumber = Number(query.get('page') ?? '1');
    if (!Number.isInteger(pageNumber) || pageNumber < 1) return badRequest('page must be a positive integer');
    const size = pageSize(store, query, 'per_page', 100);
    const after = optionalTime(query, 'after');
    const matching = store.listOrders('platform_b').filter(({ createdAt }) => after === null || createdAt > after);
    const orders = matching.slice((pageNumber - 1) * size, pageNumber * size).map(({ order }) => order);
    const headers = { 'X-WP-Total': String(matching.length), 'X-WP-TotalPages': String(Math.ceil(matching.length / size)) };
    return { status: 200, body: orders, headers };
  },
  placeOrder(body, { id, shopDomain, createdAt }) {
    const request = accept(platformBOrderRequest, body);
    const orderCurrency = request.currency ?? 'USD';
    const lines = request.line_items.map((line) => ({
      sku: line.sku,
      title: line.name,
      vendor: shopDomain,
      quantity: line.quantity,
      price: fromMinorUnits(Math.round(toMinorUnits(line.total, orderCurrency) / line.quantity), orderCurrency),
    }));
    const built = buildOrderPayload('platform_b', {
      id,
      currency: orderCurrency,
      email: request.billing?.email,
      shippingAddress: null,
      lines,
      createdAt,
    });
    return {
      ...built,
      status: request.status ?? 'pending',
      shipping: { ...(built.shipping as JsonObject), ...request.shipping },
      billing: { ...(built.billing as JsonObject), ...request.billing },
      meta_data: request.meta_data ?? [],
    };
  },
  fulfill(body, order) {
    const tracking = accept(platformBTrackingRequest, body);
    const trackingId = randomUUID().replaceAll('-', '');
    const payload = buildFulfillmentPayload('platform_b', {
      orderId: String(order.id),
      trackingNumbers: [tracking.tracking_number],
      trackingUrls: distinct([tracking.tracking_link]),
      company: tracking.tracking_provider,
    });
    return {
      id: trackingId,
      payload,
      reply: { tracking_id: trackingId, ...tracking, date_shipped: new Date().toISOString().slice(0, 10) },
    };
  },
};

const custom: SimulatedPlatform = {
  platform: 'custom',
  claims: /^\/orders(\/|$)/,
  orderPath: /^\/orders\/([^/]+)$/,
  ordersPath: /^\/orders$/,
  fulfillmentsPath: /^\/orders\/([^/]+)\/fulfillments$/,
  token: bearerToken,
  orderReply: (order) => order,
  listOrders(store, call) {
    const query = listQuery(call.query, { limit: 100 });
    // The list's filter is part of every call (platforms.md: `createdAfter`, or `updatedAfter`), a cursor's too.
    if (!query.has('createdAfter')) return badRequest('createdAfter is required');
    const after = optionalTime(query, 'createdAfter');
    const cursor = query.get('cursor');
    const position: ListPosition = cursor === null ? { since: after ?? -Infinity, inclusive: false, offset: 0 } : readCursor(cursor);
    const page = listPage(store, 'custom', position, pageSize(store, query, 'limit', 100));
    return { status: 200, body: { data: page.orders, nextCursor: page.next ? writeCursor(page.next) : null } };
  },
  placeOrder(body, { id, shopDomain, createdAt }) {
    const request = accept(customOrderRequest, body);
    const lines = request.lines.map(({ unitPrice, ...line }) => ({ ...line, vendor: shopDomain, price: unitPrice }));
    const built = buildOrderPayload('custom', {
      id: `ord_${id}`,
      currency: request.currency,
      email: request.email,
      shippingAddress: null,
      lines,
      createdAt,
    });
    return { ...built, reference: request.reference, shippingAddress: request.shippingAddress ?? null };
  },
  fulfill(body, order, { id }) {
    const request = accept(customFulfillmentRequest, body);
    const payload = buildFulfillmentPayload('custom', {
      orderId: String(order.id),
      trackingNumbers: request.trackingNumbers,
      trackingUrls: request.trackingUrls,
      company: request.carrier,
    });
    const fulfillmentId = `ful_${id}`;
    return { id: fulfillmentId, payload, reply: { id: fulfillmentId, ...payload } };
  },
};

const SIMULATED: readonly SimulatedPlatform[] = [platformA, platformB, custom];

/**
 * Answers an authenticated platform call. POSTs honour Idempotency-Key: a repeat gets the first
 * successful reply; failures are not remembered, so a retry after one can still succeed.
 */
export function answerPlatformRequest(
  state: SandboxState,
  call: PlatformRequest,
): { reply: Reply; idempotentReplay: boolean } {
  const simulated = SIMULATED.find((candidate) => candidate.claims.test(call.path));
  if (simulated === undefined) return { reply: NOT_FOUND, idempotentReplay: false };
  const store = state.store(call.shopDomain);
  const token = simulated.token(call.request);
  if (store.faults.echoToken) return { reply: echoing(token ?? '', store.faults.echoToken), idempotentReplay: false };
  if (!isAuthorised(store, token)) return { reply: unauthorised(token), idempotentReplay: false };
  const idempotencyKey = call.method === 'POST' ? header(call.request, 'idempotency-key') : undefined;
  const remembered = idempotencyKey === undefined ? undefined : store.rememberedReply(idempotencyKey);
  if (remembered !== undefined) return { reply: remembered, idempotentReplay: true };
  const reply = route(state, simulated, store, call, idempotencyKey ?? null);
  if (idempotencyKey !== undefined && reply.status >= 200 && reply.status < 300) {
    store.rememberReply(idempotencyKey, reply);
  }
  return { reply, idempotentReplay: false };
}

function route(
  state: SandboxState,
  simulated: SimulatedPlatform,
  store: StoreState,
  call: PlatformRequest,
  idempotencyKey: string | null,
): Reply {
  const context = (): NewObject => ({
    id: state.nextId(),
    shopDomain: call.shopDomain,
    createdAt: new Date().toISOString(),
  });
  try {
    const watched = watchedReply(simulated.platform, store, call);
    if (watched) return watched;
    const cancelled = answerCancelCall(store, { platform: simulated.platform, method: call.method, path: call.path, text: call.text });
    if (cancelled) return cancelled;
    if (call.method === 'GET' && simulated.ordersPath.test(call.path)) return simulated.listOrders(store, call);
    const orderMatch = simulated.orderPath.exec(call.path);
    if (call.method === 'GET' && orderMatch) {
      const order = store.order(simulated.platform, decodeURIComponent(orderMatch[1] ?? ''));
      if (!order) return NOT_FOUND;
      const offset = simulated.platform === 'platform_a' ? (store.faults.lineIdsOnReadOffset ?? 0) : 0;
      return { status: 200, body: simulated.orderReply(offset === 0 ? order : withLineIdsShifted(order, offset)) };
    }
    if (call.method === 'POST' && simulated.ordersPath.test(call.path)) {
      const body = jsonBody(call.text);
      const created = context();
      const order = simulated.placeOrder(body, created);
      if (store.faults.unkeepableOrderIds) order.id = unkeepableId(store.faults.unkeepableOrderIds, created.id);
      store.saveOrder(simulated.platform, order);
      const id = order.id as number | string;
      store.orders.push({ platform: simulated.platform, id, idempotencyKey, body, order, createdAt: created.createdAt });
      return { status: 201, body: simulated.orderReply(order) };
    }
    const fulfillmentMatch = simulated.fulfillmentsPath.exec(call.path);
    if (call.method === 'POST' && fulfillmentMatch) {
      const orderId = decodeURIComponent(fulfillmentMatch[1] ?? '');
      const order = store.order(simulated.platform, orderId);
      if (order === undefined) return NOT_FOUND;
      const body = jsonBody(call.text);
      const created = context();
      const { id, payload, reply } = simulated.fulfill(body, order, created);
      store.fulfillments.push({
        platform: simulated.platform,
        id,
        orderId,
        idempotencyKey,
        body,
        payload,
        createdAt: created.createdAt,
      });
      showAddedFulfillment(store, simulated.platform, orderId, addedTracking(simulated.platform, id, payload));
      return { status: 201, body: reply };
    }
    return NOT_FOUND;
  } catch (error) {
    if (error instanceof Refusal) return error.reply;
    throw error;
  }
}

/** The tracking of a fulfillment added through the API, from its payload (the form its fulfillments/create webhook has). */
function addedTracking(platform: Platform, id: string | number, payload: JsonObject) {
  const texts = (value: unknown) => (Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string' && entry !== '') : []);
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
  switch (platform) {
    case 'platform_a':
      return { id, trackingNumbers: texts(payload.tracking_numbers), trackingUrls: texts(payload.tracking_urls), company: text(payload.tracking_company) };
    case 'platform_b':
      return { id, trackingNumbers: texts([payload.tracking_number]), trackingUrls: texts([payload.tracking_link]), company: text(payload.tracking_provider) };
    case 'custom':
      return { id, trackingNumbers: texts(payload.trackingNumbers), trackingUrls: texts(payload.trackingUrls), company: text(payload.carrier) };
  }
}

/** A platform_a order as a read with `lineIdsOnReadOffset` answers it: every line id shifted, in its fulfillments too. */
function withLineIdsShifted(order: JsonObject, offset: number): JsonObject {
  const shift = (line: JsonObject) => (typeof line.id === 'number' ? { ...line, id: line.id + offset } : line);
  return {
    ...order,
    line_items: ((order.line_items as JsonObject[] | undefined) ?? []).map(shift),
    fulfillments: ((order.fulfillments as JsonObject[] | undefined) ?? []).map((f) => ({ ...f, line_items: ((f.line_items as JsonObject[] | undefined) ?? []).map(shift) })),
  };
}

/** Registered stores want their own token; unregistered ones take any non-empty token. */
function isAuthorised(store: StoreState, token: string | undefined): token is string {
  if (!token) return false;
  return store.accessToken === null || store.accessToken === token;
}

/** Echoes the presented token, as careless platforms do, so tests can prove adapters keep it out of errors. */
function unauthorised(token: string | undefined): Reply {
  const presented = token ? `: ${token}` : '';
  return {
    status: 401,
    body: { errors: `[API] Invalid API key or access token (unrecognized login or wrong password)${presented}` },
  };
}

/** An order id no service could store as it is (varchar(255), no NUL). */
function unkeepableId(kind: 'oversized' | 'nul', id: number): string {
  return kind === 'oversized' ? `ord_${id}_${'x'.repeat(300)}`.slice(0, 300) : `ord_${id}\u0000`;
}

/** A 401 whose body repeats the presented token in one of the forms a platform may write it in. */
function echoing(token: string, form: NonNullable<StoreState['faults']['echoToken']>): Reply {
  const prefix = '{"errors":"[API] Invalid API key or access token: ';
  switch (form) {
    case 'raw':
      return { status: 401, body: { errors: `[API] Invalid API key or access token: ${token} (unrecognized login)` } };
    case 'unicode-escaped': {
      const escaped = [...token].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
      return { status: 401, rawBody: `${prefix}${escaped}"}` };
    }
    case 'url-encoded':
      return { status: 401, body: { errors: `[API] Invalid API key or access token; see https://status.example/auth?token=${encodeURIComponent(token)}` } };
    case 'base64':
      return { status: 401, body: { errors: `[API] Invalid credentials: Basic ${Buffer.from(token).toString('base64')}` } };
    case 'prefix':
      // A validation message quoting the start of the credential, as a careless platform cuts it.
      return { status: 422, body: { errors: { access_token: [`is not valid: ${token.slice(0, 200)}`] } } };
  }
}

function bearerToken(request: IncomingMessage): string | undefined {
  return /^Bearer (.+)$/i.exec(header(request, 'authorization') ?? '')?.[1];
}

/** Where a cursor-paged list continues: orders created since `since`, skipping the first `offset`. */
interface ListPosition {
  since: number;
  inclusive: boolean;
  offset: number;
  /** platform_a's status filter: `open` (its default) leaves cancelled orders out, `any` keeps them. */
  status?: string;
}

function listPage(store: StoreState, platform: Platform, position: ListPosition, size: number) {
  const matching = store
    .listOrders(platform)
    .filter(({ createdAt }) => (position.inclusive ? createdAt >= position.since : createdAt > position.since))
    .filter(({ order }) => position.status === undefined || position.status === 'any' || (position.status === 'cancelled') === !!order.cancelled_at);
  const orders = matching.slice(position.offset, position.offset + size).map(({ order }) => order);
  const more = matching.length > position.offset + size;
  return { orders, next: more ? { ...position, offset: position.offset + size } : null };
}

/** Opaque to the caller, as the platforms' cursors are. */
function writeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify({ ...position, since: Number.isFinite(position.since) ? position.since : null })).toString('base64url');
}

function readCursor(cursor: string): ListPosition {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Omit<ListPosition, 'since'> & { since: number | null };
    if (!Number.isInteger(parsed.offset) || typeof parsed.inclusive !== 'boolean') throw new Error('bad cursor');
    return { ...parsed, since: parsed.since ?? -Infinity };
  } catch {
    throw new Refusal(badRequest('invalid cursor'));
  }
}

/** The list's query, checked: a page size within 1..max. */
function listQuery(query: URLSearchParams, sizes: Record<string, number>): URLSearchParams {
  for (const [name, max] of Object.entries(sizes)) {
    const value = query.get(name);
    if (value === null) continue;
    const size = Number(value);
    if (!Number.isInteger(size) || size < 1 || size > max) throw new Refusal(badRequest(`${name} must be between 1 and ${max}`));
  }
  return query;
}

/** The size asked for (or the platform's default), capped by the store's list page size. */
function pageSize(store: StoreState, query: URLSearchParams, name: string, fallback: number): number {
  const asked = Number(query.get(name) ?? String(Math.min(fallback, 50)));
  return Math.min(asked, store.listPageSize ?? asked);
}

function optionalTime(query: URLSearchParams, name: string): number | null {
  const value = query.get(name);
  if (value === null) return null;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new Refusal(badRequest(`${name} must be an ISO-8601 date-time`));
  return time;
}

/** The store's own base URL as the caller reached it, for the links the platform hands out. */
function storeBaseUrl(call: PlatformRequest): string {
  return `http://${header(call.request, 'host') ?? '127.0.0.1'}/${encodeURIComponent(call.shopDomain)}`;
}

function badRequest(message: string): Reply {
  return { status: 400, body: { errors: message } };
}

function distinct(values: ReadonlyArray<string | undefined>): string[] {
  return [...new Set(values.filter((value): value is string => !!value))];
}

/** The divergence watch's reads (test/sandbox/updated.ts): the updated-since lists and platform_b's shipment trackings. */
function watchedReply(platform: Platform, store: StoreState, call: PlatformRequest): Reply | null {
  if (call.method !== 'GET') return null;
  const simulated = SIMULATED.find((candidate) => candidate.platform === platform)!;
  if (simulated.ordersPath.test(call.path) && isUpdatedList(platform, call.query)) return updatedListReply(store, platform, call.query, storeBaseUrl(call));
  const trackings = platform === 'platform_b' ? simulated.fulfillmentsPath.exec(call.path) : null;
  if (trackings) return shipmentTrackingsReply(store, decodeURIComponent(trackings[1] ?? ''));
  return null;
}
