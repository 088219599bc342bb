/**
 * Cancelling supplier orders on each platform (platforms.md: cancel, refund, order state, and the
 * created-since lists an order placed with a lost answer is found again in). Each adapter spreads
 * its platform's functions from here, so the cancellation feature stays in one file per concern.
 */
import { z } from 'zod';
import { LIST_PAGE, type PlatformHttpClient, type ResponseHeaders } from './http.ts';
import { nextLink, pageEntries, readShrinking, totalPagesOf, withLimit } from './listing.ts';
import { wellFormed } from '../shared/text.ts';
import { anyId, parsePayload, platformAFulfillmentShipped } from './payload.ts';
import { listShipmentsPlatformB, platformBMayHaveShippedOpen } from './updated.ts';
import { type CancellingAdapter, type LineToCancel, type LookupCut, PlatformError, type StoreConnection, type SupplierLine, type SupplierOrderLineState, type SupplierOrderState } from './types.ts';

/** Older orders are listed too: the platform's clock and ours may differ a little. */
const CLOCK_MARGIN_MS = 60_000;
/**
 * A lookup looks through at most as many orders as this many of the platform's full pages hold (a
 * page too large to read whole is read again smaller, so its bound counts orders, not pages).
 */
const MAX_LOOKUP_PAGES = 20;
/**
 * And makes at most this many reads (a page read again smaller counts each time): a supplier whose
 * every order is near the list page's bound is read one order a read, and 5,000 reads would hold a
 * worker and the store's turns for an hour.
 */
const MAX_LOOKUP_READS = 100;
/** The lookup's page size on platform_a (its largest). */
const LOOKUP_PAGE_A = 250;
/** The lookup's page size on custom (its largest). */
const LOOKUP_LIMIT_C = 100;

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
 * The lookup read as far as its bound while the list went on: the order may be further on (a backlog
 * put thousands of orders between the job's creation and its placement), so "not found" would be a
 * guess the caller acts on (a cancellation `not_placed` while the supplier ships it, a job placed
 * twice). A failure instead: the work is retried and, failing, reported.
 */
function cutShort(store: StoreConnection, reference: string, whenCut: LookupCut, looked: number, reads: number): null {
  if (whenCut === 'not_found') return null;
  throw new PlatformError(
    `${store.platform} ${store.shopDomain}: the order carrying reference ${reference} was not among the first ${looked} orders created since the job (${reads} reads), and the list goes on; not looked further`,
    false,
  );
}

/** One page of a lookup: its entries, and where the list goes on (null: this page was the last). */
interface LookupPage<P> {
  orders: unknown[];
  next: P | null;
}

/**
 * The id of the first order of the list whose reference (`referenceOf`) is `reference`, or null
 * when the list ends without it; read from `first`, `read(at, size)` asking for `size` orders. A
 * page over the list page's bound is read again with fewer orders (readShrinking, as the lists do)
 * and the lookup goes on with that size. It stops (cutShort) once it has looked through as many
 * orders as MAX_LOOKUP_PAGES full pages hold, or made MAX_LOOKUP_READS reads, while the list goes on.
 */
async function lookUp<P>(
  store: StoreConnection,
  reference: string,
  whenCut: LookupCut,
  fullPage: number,
  first: P,
  referenceOf: (order: unknown) => unknown,
  read: (at: P, size: number) => Promise<LookupPage<P>>,
): Promise<string | null> {
  let size = fullPage;
  let looked = 0;
  let reads = 0;
  for (let at: P | null = first; at !== null; ) {
    if (looked >= fullPage * MAX_LOOKUP_PAGES || reads >= MAX_LOOKUP_READS) return cutShort(store, reference, whenCut, looked, reads);
    const from: P = at;
    const answer = await readShrinking(size, (asked) => {
      reads += 1;
      return read(from, asked);
    });
    size = answer.size;
    looked += answer.page.orders.length;
    const found = answer.page.orders.find((order) => referenceOf(order) === reference);
    if (found) return String((found as { id: unknown }).id);
    at = answer.page.next;
  }
  return null;
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
  // One read shows what shipped (the order's fulfillments) beside the lines.
  const read = (store: StoreConnection, orderId: string) => http.get(store, `${API_A}/orders/${encodeURIComponent(orderId)}.json`, readOrderA);
  return {
    readSupplierOrder: read,
    readCalls: 1,
    readSupplierLines: read,
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
    findOrderByReference: (store, reference, since, whenCut) =>
      // From the first page (''), then each `rel="next"` URL as given, with a smaller `limit` once shrunk (as listOrders).
      lookUp<string>(store, reference, whenCut, LOOKUP_PAGE_A, '', referenceOfA, (next, size) => {
        const readPage = (body: unknown, headers: ResponseHeaders) => ({
          orders: pageEntries(parsePayload(z.object({ orders: z.unknown() }), body, 'platform_a order list').orders, 'platform_a order list'),
          next: nextLink(headers('link')),
        });
        if (next !== '') return http.getUrl(store, size < LOOKUP_PAGE_A ? withLimit(next, size) : next, readPage, LIST_PAGE);
        const query = new URLSearchParams({ status: 'any', created_at_min: sinceOf(since), limit: String(size) });
        return http.get(store, `${API_A}/orders.json?${query}`, readPage, LIST_PAGE);
      }),
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

function readOrderB(body: unknown): SupplierOrderState & { status: string } {
  const order = parsePayload(orderB, body, 'platform_b order');
  const completed = order.status === 'completed';
  const lines = order.line_items.map((line) => ({
    lineId: line.id ?? null,
    sku: line.sku,
    quantity: line.quantity,
    cancelledQuantity: 0,
    fulfilledQuantity: completed ? line.quantity : 0,
  }));
  return { id: order.id, status: order.status, cancelled: order.status === 'cancelled' || order.status === 'refunded', fulfillment: completed ? 'full' : 'none', lines };
}

const readOrderOnlyB = (http: PlatformHttpClient, store: StoreConnection, orderId: string) =>
  http.get(store, `${API_B}/orders/${encodeURIComponent(orderId)}`, readOrderB);

/**
 * A platform_b order as a cancellation must see it. A supplier can add shipment tracking to an order
 * it leaves open (`processing`, `on-hold`, a status its store adds: see PLATFORM_B_UNSHIPPED; its
 * webhook may be lost), and platform_b cancels such an order all the same: the goods would be on
 * their way while the service reported them stopped. So an open order's trackings count, and one
 * with any is shipped (platform_b ships a whole order: the cancellation is `too_late`, and the
 * divergence watch records the tracking). Both are read at once, so a cancellation waits for one
 * round trip; the trackings' answer (or its failure) matters only for an open order.
 */
async function readSupplierOrderB(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<SupplierOrderState> {
  const [order, trackings] = await Promise.allSettled([readOrderOnlyB(http, store, orderId), listShipmentsPlatformB(http, store, orderId)]);
  if (order.status === 'rejected') throw order.reason;
  const { status, ...state } = order.value;
  if (!platformBMayHaveShippedOpen(status)) return state;
  if (trackings.status === 'rejected') throw trackings.reason;
  if (trackings.value.length === 0) return state;
  return { ...state, fulfillment: 'full', lines: state.lines.map((line) => ({ ...line, fulfilledQuantity: line.quantity })) };
}

const referenceOfB = (order: unknown) =>
  (order as { meta_data?: { key?: unknown; value?: unknown }[] } | null)?.meta_data?.find((entry) => entry?.key === 'sync_reference')?.value;

export function platformBCancelling(http: PlatformHttpClient): CancellingAdapter {
  return {
    readSupplierOrder: (store, orderId) => readSupplierOrderB(http, store, orderId),
    readCalls: 2,
    readSupplierLines: async (store, orderId) => {
      const { status: _status, ...state } = await readOrderOnlyB(http, store, orderId);
      return state;
    },
    cancelSupplierOrder: (store, orderId) => http.put(store, `${API_B}/orders/${encodeURIComponent(orderId)}`, { status: 'cancelled' }, statusOnly),
    cancelOverwritesStatus: true,
    // The platform cannot cancel some lines only.
    cancelSupplierLines: null,
    // Paged by number: a page read again smaller goes on from the page holding the first order not
    // yet looked through (a few may be looked through twice).
    findOrderByReference: (store, reference, since, whenCut) =>
      lookUp<number>(store, reference, whenCut, LOOKUP_PER_PAGE_B, 0, referenceOfB, async (offset, size) => {
        const page = Math.floor(offset / size) + 1;
        const query = new URLSearchParams({ after: `${sinceOf(since).slice(0, 19)}Z`, per_page: String(size), page: String(page), orderby: 'date', order: 'asc' });
        const { orders, totalPages } = await http.get(store, `${API_B}/orders?${query}`, (body, headers) => {
          // A header it cannot read (sent twice and merged, `2, 2`; empty) says nothing: read as a missing one.
          return { orders: pageEntries(body, 'platform_b order list'), totalPages: totalPagesOf(headers, null) };
        }, LIST_PAGE);
        // Without the header (a proxy may drop it), a short page is the last one, as listOrders reads it.
        const last = totalPages === null ? orders.length < size : !(page < totalPages);
        return { orders, next: last ? null : (page - 1) * size + orders.length };
      }),
  };
}

// custom ----------------------------------------------------------------------------------------

const orderC = z.object({
  id: anyId,
  status: z.string().nullish(),
  cancelledAt: z.string().nullish(),
  lines: z.array(z.object({ sku: text, quantity: lenientQuantity, cancelledQuantity: lenientQuantity })),
});

/** custom's 409 when (some of) the quantities asked are fulfilled already: those quantities (platforms.md). */
const alreadyFulfilledC = z.object({ error: z.literal('already_fulfilled'), lines: z.array(z.object({ sku: text, quantity: lenientQuantity })) });

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
  const read = (store: StoreConnection, orderId: string) => http.get(store, `/orders/${encodeURIComponent(orderId)}`, readOrderC);
  return {
    readSupplierOrder: read,
    readCalls: 1,
    readSupplierLines: read,
    cancelSupplierOrder: (store, orderId, idempotencyKey) => cancel(store, orderId, null, idempotencyKey),
    cancelOverwritesStatus: false,
    cancelSupplierLines: (store, orderId, lines, idempotencyKey) => cancel(store, orderId, lines, idempotencyKey),
    fulfilledIn: (refusal) => {
      if (refusal.status !== 409) return null;
      const said = alreadyFulfilledC.safeParse(refusal.answer);
      return said.success ? said.data.lines.filter((line) => line.quantity > 0) : null;
    },
    // From no cursor (''), then each answer's `nextCursor`.
    findOrderByReference: (store, reference, since, whenCut) =>
      lookUp<string>(store, reference, whenCut, LOOKUP_LIMIT_C, '', (order) => (order as { reference?: unknown } | null)?.reference, (cursor, size) => {
        // The filter goes with every page, the cursor's too (platforms.md; as listOrders sends it).
        const query = new URLSearchParams({ createdAfter: sinceOf(since), limit: String(size), ...(cursor && { cursor }) });
        return http.get(store, `/orders?${query}`, (body) => {
          const parsed = parsePayload(z.object({ data: z.unknown(), nextCursor: z.string().nullish() }), body, 'custom order list');
          return { orders: pageEntries(parsed.data, 'custom order list'), next: parsed.nextCursor || null };
        }, LIST_PAGE);
      }),
  };
}
