/**
 * Cancelling supplier orders on each platform (platforms.md: cancel, refund, order state, and the
 * created-since lists an order placed with a lost answer is found again in). Each adapter spreads
 * its platform's functions from here, so the cancellation feature stays in one file per concern.
 */
import { z } from 'zod';
import { LIST_PAGE, type PlatformHttpClient, type ResponseHeaders } from './http.ts';
import { nextLink, pageEntries } from './listing.ts';
import { wellFormed } from '../shared/text.ts';
import { anyId, parsePayload, platformAFulfillmentShipped } from './payload.ts';
import { type CancellingAdapter, type LineToCancel, type LookupCut, PlatformError, type StoreConnection, type SupplierLine, type SupplierOrderLineState, type SupplierOrderState } from './types.ts';

/** Older orders are listed too: the platform's clock and ours may differ a little. */
const CLOCK_MARGIN_MS = 60_000;
/** At most this many pages are read looking for one order (each a list page: LIST_PAGE's bound, not one order's). */
const MAX_LOOKUP_PAGES = 20;

const lenientQuantity = z.number().int().nonnegative().nullish().transform((value) => value ?? 0);
const text = z.string().nullish().transform((value) => value ?? '');

const statusOnly = (_body: unknown, _headers: ResponseHeaders, status: number) => ({ status });

/**
 * The lines of a create answer with the supplier's own line ids (platform_a `line_items`, platform_b
 * `line_items`), kept with the job so a cancellation names them. Null when the answer does not give
 * every line an id and a SKU the service can keep: the order was created all the same (its attempt
 * must not fail for this), and a cancellation then reads the lines from the order.
 */
export const createdLines = z
  .array(
    z.object({
      id: anyId,
      sku: z.string().nullish().transform((value) => value ?? '').refine((sku) => sku === wellFormed(sku)),
      quantity: z.number().int().nonnegative().safe(),
    }),
  )
  .transform((lines): SupplierLine[] => lines.map(({ id, sku, quantity }) => ({ lineId: id, sku, quantity })))
  .nullish()
  .catch(null)
  .transform((lines) => lines ?? null);

const sinceOf = (since: Date) => new Date(since.getTime() - CLOCK_MARGIN_MS).toISOString();

/**
 * The lookup read its last page while the list went on: the order may be further on (a backlog put
 * thousands of orders between the job's creation and its placement), so "not found" would be a guess
 * the caller acts on (a cancellation `not_placed` while the supplier ships it, a job placed twice).
 * A failure instead: the work is retried and, failing, reported.
 */
function cutShort(store: StoreConnection, reference: string, whenCut: LookupCut): null {
  if (whenCut === 'not_found') return null;
  throw new PlatformError(
    `${store.platform} ${store.shopDomain}: the order carrying reference ${reference} was not among the first ${MAX_LOOKUP_PAGES} pages of orders created since the job, and the list goes on; not looked further`,
    false,
  );
}

/** `full` when nothing is left to ship of what was not cancelled, `partial` when some was shipped. */
function fulfillmentOf(lines: SupplierOrderLineState[], shippedWhole = false): SupplierOrderState['fulfillment'] {
  if (shippedWhole) return 'full';
  const shipped = lines.reduce((sum, line) => sum + line.fulfilledQuantity, 0);
  const open = lines.reduce((sum, line) => sum + Math.max(0, line.quantity - line.cancelledQuantity - line.fulfilledQuantity), 0);
  if (shipped === 0) return 'none';
  return open === 0 ? 'full' : 'partial';
}

// platform_a ------------------------------------------------------------------------------------

const API_A = '/admin/api/2025-01';

const orderA = z.object({
  id: anyId,
  cancelled_at: z.string().nullish(),
  fulfillment_status: z.string().nullish(),
  note_attributes: z.array(z.object({ name: z.string(), value: z.unknown() })).nullish(),
  line_items: z.array(
    z.object({ id: anyId, sku: text, quantity: lenientQuantity, fulfillable_quantity: z.number().int().nonnegative().nullish() }),
  ),
  fulfillments: z
    .array(z.object({ status: z.string().nullish(), line_items: z.array(z.object({ id: anyId.nullish(), sku: text, quantity: lenientQuantity })).nullish() }))
    .nullish(),
});

function readOrderA(body: unknown): SupplierOrderState {
  const { order } = parsePayload(z.object({ order: orderA }), body, 'platform_a order');
  const shipped = new Map<string, number>();
  for (const fulfillment of order.fulfillments ?? []) {
    // A cancelled (or failed) fulfillment shipped nothing: its lines are still open to cancel.
    if (!platformAFulfillmentShipped(fulfillment.status)) continue;
    for (const line of fulfillment.line_items ?? []) {
      const key = line.id ?? `sku:${line.sku}`;
      shipped.set(key, (shipped.get(key) ?? 0) + line.quantity);
    }
  }
  const lines = order.line_items.map((line) => {
    const fulfilledQuantity = shipped.get(line.id) ?? shipped.get(`sku:${line.sku}`) ?? 0;
    const open = line.fulfillable_quantity ?? line.quantity - fulfilledQuantity;
    return {
      lineId: line.id,
      sku: line.sku,
      quantity: line.quantity,
      fulfilledQuantity,
      cancelledQuantity: Math.max(0, line.quantity - fulfilledQuantity - open),
    };
  });
  const shippedWhole = order.fulfillment_status === 'fulfilled';
  return { id: order.id, cancelled: !!order.cancelled_at, fulfillment: fulfillmentOf(lines, shippedWhole), lines };
}

const referenceOfA = (order: unknown) =>
  (order as { note_attributes?: { name?: unknown; value?: unknown }[] } | null)?.note_attributes?.find((entry) => entry?.name === 'sync_reference')?.value;

export function platformACancelling(http: PlatformHttpClient): CancellingAdapter {
  return {
    readSupplierOrder: (store, orderId) => http.get(store, `${API_A}/orders/${encodeURIComponent(orderId)}.json`, readOrderA),
    cancelSupplierOrder: (store, orderId, idempotencyKey) =>
      http.post(store, `${API_A}/orders/${encodeURIComponent(orderId)}/cancel.json`, { reason: 'customer', email: false }, idempotencyKey, statusOnly),
    cancelOverwritesStatus: false,
    cancelSupplierLines: (store, orderId, lines, idempotencyKey) =>
      http.post(
        store,
        `${API_A}/orders/${encodeURIComponent(orderId)}/refunds.json`,
        { refund: { refund_line_items: lines.map((line) => ({ line_item_id: Number(line.lineId), quantity: line.quantity, restock_type: 'cancel' })), notify: false } },
        idempotencyKey,
        statusOnly,
      ),
    async findOrderByReference(store, reference, since, whenCut) {
      const query = new URLSearchParams({ status: 'any', created_at_min: sinceOf(since), limit: '250' });
      const readPage = (body: unknown, headers: ResponseHeaders) => ({
        orders: pageEntries(parsePayload(z.object({ orders: z.unknown() }), body, 'platform_a order list').orders, 'platform_a order list'),
        next: nextLink(headers('link')),
      });
      let page = await http.get(store, `${API_A}/orders.json?${query}`, readPage, LIST_PAGE);
      for (let pages = 1; ; pages++) {
        const found = page.orders.find((order) => referenceOfA(order) === reference);
        if (found) return String((found as { id: unknown }).id);
        if (page.next === null) return null;
        if (pages >= MAX_LOOKUP_PAGES) return cutShort(store, reference, whenCut);
        page = await http.getUrl(store, page.next, readPage, LIST_PAGE);
      }
    },
  };
}

// platform_b ------------------------------------------------------------------------------------

const API_B = '/wp-json/wc/v3';
/** The lookup's page size on platform_b (its largest). */
const LOOKUP_PER_PAGE_B = 100;

const orderB = z.object({
  id: anyId,
  status: z.string(),
  line_items: z.array(z.object({ id: anyId.nullish(), sku: text, quantity: lenientQuantity })),
});

function readOrderB(body: unknown): SupplierOrderState {
  const order = parsePayload(orderB, body, 'platform_b order');
  const completed = order.status === 'completed';
  const lines = order.line_items.map((line) => ({
    lineId: line.id ?? null,
    sku: line.sku,
    quantity: line.quantity,
    cancelledQuantity: 0,
    fulfilledQuantity: completed ? line.quantity : 0,
  }));
  return { id: order.id, cancelled: order.status === 'cancelled' || order.status === 'refunded', fulfillment: completed ? 'full' : 'none', lines };
}

const referenceOfB = (order: unknown) =>
  (order as { meta_data?: { key?: unknown; value?: unknown }[] } | null)?.meta_data?.find((entry) => entry?.key === 'sync_reference')?.value;

export function platformBCancelling(http: PlatformHttpClient): CancellingAdapter {
  return {
    readSupplierOrder: (store, orderId) => http.get(store, `${API_B}/orders/${encodeURIComponent(orderId)}`, readOrderB),
    cancelSupplierOrder: (store, orderId) => http.put(store, `${API_B}/orders/${encodeURIComponent(orderId)}`, { status: 'cancelled' }, statusOnly),
    cancelOverwritesStatus: true,
    // The platform cannot cancel some lines only.
    cancelSupplierLines: null,
    async findOrderByReference(store, reference, since, whenCut) {
      for (let page = 1; page <= MAX_LOOKUP_PAGES; page++) {
        const query = new URLSearchParams({ after: `${sinceOf(since).slice(0, 19)}Z`, per_page: String(LOOKUP_PER_PAGE_B), page: String(page), orderby: 'date', order: 'asc' });
        const { orders, totalPages } = await http.get(store, `${API_B}/orders?${query}`, (body, headers) => {
          // A header it cannot read (sent twice and merged, `2, 2`; empty) says nothing: read as a missing one.
          const total = headers('x-wp-totalpages')?.trim() ?? null;
          return { orders: pageEntries(body, 'platform_b order list'), totalPages: total !== null && /^\d+$/.test(total) ? Number(total) : null };
        }, LIST_PAGE);
        const found = orders.find((order) => referenceOfB(order) === reference);
        if (found) return String((found as { id: unknown }).id);
        // Without the header (a proxy may drop it), a short page is the last one, as listOrders reads it.
        if (totalPages === null ? orders.length < LOOKUP_PER_PAGE_B : !(page < totalPages)) return null;
      }
      return cutShort(store, reference, whenCut);
    },
  };
}

// custom ----------------------------------------------------------------------------------------

const orderC = z.object({
  id: anyId,
  status: z.string().nullish(),
  cancelledAt: z.string().nullish(),
  lines: z.array(z.object({ sku: text, quantity: lenientQuantity, cancelledQuantity: lenientQuantity })),
});

function readOrderC(body: unknown): SupplierOrderState {
  const order = parsePayload(orderC, body, 'custom order');
  const fulfilled = order.status === 'fulfilled';
  const lines = order.lines.map((line) => ({
    lineId: null,
    sku: line.sku,
    quantity: line.quantity,
    cancelledQuantity: line.cancelledQuantity,
    fulfilledQuantity: fulfilled ? line.quantity - line.cancelledQuantity : 0,
  }));
  return { id: order.id, cancelled: order.status === 'cancelled' || !!order.cancelledAt, fulfillment: fulfilled ? 'full' : 'none', lines };
}

export function customCancelling(http: PlatformHttpClient): CancellingAdapter {
  const cancel = (store: StoreConnection, orderId: string, lines: LineToCancel[] | null, idempotencyKey: string) =>
    http.post(
      store,
      `/orders/${encodeURIComponent(orderId)}/cancel`,
      { ...(lines && { lines: lines.map(({ sku, quantity }) => ({ sku, quantity })) }), reason: 'customer' },
      idempotencyKey,
      statusOnly,
    );
  return {
    readSupplierOrder: (store, orderId) => http.get(store, `/orders/${encodeURIComponent(orderId)}`, readOrderC),
    cancelSupplierOrder: (store, orderId, idempotencyKey) => cancel(store, orderId, null, idempotencyKey),
    cancelOverwritesStatus: false,
    cancelSupplierLines: (store, orderId, lines, idempotencyKey) => cancel(store, orderId, lines, idempotencyKey),
    async findOrderByReference(store, reference, since, whenCut) {
      let cursor: string | null = null;
      for (let pages = 0; pages < MAX_LOOKUP_PAGES; pages++) {
        // The filter goes with every page, the cursor's too (platforms.md; as listOrders sends it).
        const query = new URLSearchParams({ createdAfter: sinceOf(since), limit: '100', ...(cursor && { cursor }) });
        const page: { data: unknown[]; nextCursor: string | null } = await http.get(store, `/orders?${query}`, (body) => {
          const parsed = parsePayload(z.object({ data: z.unknown(), nextCursor: z.string().nullish() }), body, 'custom order list');
          return { data: pageEntries(parsed.data, 'custom order list'), nextCursor: parsed.nextCursor ?? null };
        }, LIST_PAGE);
        const found = page.data.find((order) => (order as { reference?: unknown } | null)?.reference === reference);
        if (found) return String((found as { id: unknown }).id);
        if (!page.nextCursor) return null;
        cursor = page.nextCursor;
      }
      return cutShort(store, reference, whenCut);
    },
  };
}
