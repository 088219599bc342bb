import { orderFulfillmentsCustom } from './order-fulfillments.ts';
import { z } from 'zod';
import { fromMinorUnits } from '../money.ts';
import type { ResellerOrder, SourceFulfillment, SupplierOrder, Tracking } from '../orders/types.ts';
import { type HttpClientSettings, LIST_PAGE, PlatformHttpClient } from './http.ts';
import { cancelledBefore, listedOrder, pageEntries, readShrinking, timestamp } from './listing.ts';
import { listShipmentsCustom, listUpdatedCustom, readListedCustom } from './updated.ts';
import { anyId, assertLineTotal, distinct, lineText, optionalText, orderCurrency, parsePayload, postalAddress, priceMinor, quantity, stringList, trackingLinks } from './payload.ts';
import type { ListedOrder, PlatformAdapter, StoreConnection } from './types.ts';
import { customCancelling } from './cancelling.ts';

const ORDER = 'custom order';
const FULFILLMENT = 'custom fulfillment';
/** The endpoint's largest page. */
const LIST_LIMIT = 100;

/** A supplier's own endpoint speaks the service's address shape. */
const addressSchema = z.object({
  name: optionalText,
  address1: optionalText,
  address2: optionalText,
  city: optionalText,
  province: optionalText,
  zip: optionalText,
  countryCode: optionalText,
  phone: optionalText,
});

const orderSchema = z.object({
  id: anyId,
  status: z.string().nullish(),
  currency: orderCurrency,
  email: optionalText,
  shippingAddress: addressSchema.nullish(),
  lines: z.array(
    z.object({
      sku: lineText,
      title: z.string(),
      vendor: lineText,
      quantity,
      // Of `quantity`, what the storefront cancelled (platforms.md); absent on an older endpoint: none.
      cancelledQuantity: z.number().int().nonnegative().nullish(),
      unitPrice: z.union([z.string(), z.number()]),
    }),
  ),
  updatedAt: z.unknown(),
});

const fulfillmentSchema = z.object({
  orderId: anyId,
  trackingNumbers: stringList,
  trackingUrls: stringList,
  carrier: optionalText,
});

const listingFields = z
  .object({ id: anyId, status: z.string().nullish(), createdAt: timestamp(true) })
  .transform((order) => ({ externalOrderId: order.id, createdAt: order.createdAt, cancelled: order.status === 'cancelled' }));

const orderListResponse = z.object({ data: z.unknown(), nextCursor: z.string().min(1).nullish() });

const createdResponse = z.object({ id: anyId });

export function createCustomAdapter(settings: HttpClientSettings): PlatformAdapter {
  const http = new PlatformHttpClient({
    ...settings,
    platform: 'custom',
    authHeaders: (accessToken) => ({ Authorization: `Bearer ${accessToken}` }),
  });
  const readCreated = (what: string) => (body: unknown, _headers: unknown, status: number) => ({ id: parsePayload(createdResponse, body, what).id, status });
  return {
    platform: 'custom',
    needsTrackingNumber: true,
    fulfillmentCalls: () => 1,
    getOrder: (store, orderId) => http.get(store, `/orders/${encodeURIComponent(orderId)}`, readOrder),
    // The answer promises only the order's id (platforms.md), and custom's lines have no ids: they are
    // cancelled by SKU, so no lines are kept (a cancellation reads the order for what is left open).
    createOrder: (store, order, idempotencyKey) =>
      http.post(store, '/orders', orderRequest(order), idempotencyKey, readCreated(`created ${ORDER}`)),
    createFulfillment: (store, orderId, tracking, idempotencyKey) =>
      http.post(
        store,
        `/orders/${encodeURIComponent(orderId)}/fulfillments`,
        fulfillmentRequest(tracking),
        idempotencyKey,
        readCreated(`created ${FULFILLMENT}`),
      ),
    listOrders: (store, since) => listOrders(http, store, since),
    listUpdatedOrders: (store, since, cursor) => listUpdatedCustom(http, store, since, cursor),
    listOrderFulfillments: (store, orderId) => orderFulfillmentsCustom(http, store, orderId),
    readListedOrder: (store, orderId) => readListedCustom(http, store, orderId),
    listShipments: (store, orderId) => listShipmentsCustom(http, store, orderId),
    parseOrderWebhook: readOrder,
    parseFulfillmentWebhook: readFulfillment,
    ...customCancelling(http),
  };
}

/**
 * Cursor paging: each answer's `nextCursor` is sent back as `cursor` until it is null. A page whose
 * answer is over the list page's bound is read again with a smaller `limit` (readShrinking), and the
 * list goes on with it.
 */
async function* listOrders(http: PlatformHttpClient, store: StoreConnection, since: Date): AsyncGenerator<ListedOrder[]> {
  let cursor: string | null = null;
  let size = LIST_LIMIT;
  do {
    const at: string | null = cursor;
    const read: { page: { orders: ListedOrder[]; nextCursor: string | null }; size: number } = await readShrinking(size, (asked) => {
      const query = new URLSearchParams({ createdAfter: since.toISOString(), limit: String(asked) });
      if (at !== null) query.set('cursor', at);
      return http.get(store, `/orders?${query}`, readOrderPage, LIST_PAGE);
    });
    size = read.size;
    yield read.page.orders;
    cursor = read.page.nextCursor;
  } while (cursor !== null);
}

function readOrderPage(body: unknown): { orders: ListedOrder[]; nextCursor: string | null } {
  const page = parsePayload(orderListResponse, body, `${ORDER} list`);
  return {
    orders: pageEntries(page.data, `${ORDER} list`).map((entry) => listedOrder(entry, listingFields, readOrder, ORDER)),
    nextCursor: page.nextCursor ?? null,
  };
}

function readOrder(body: unknown): ResellerOrder {
  const order = parsePayload(orderSchema, body, ORDER);
  return {
    externalOrderId: order.id,
    currency: order.currency,
    email: order.email,
    shippingAddress: order.shippingAddress ? postalAddress(order.shippingAddress) : null,
    lines: order.lines.map((line, index) => {
      const unitPriceMinor = priceMinor(line.unitPrice, order.currency, ORDER, `lines.${index}.unitPrice`);
      assertLineTotal(unitPriceMinor, line.quantity, order.currency, ORDER, `lines.${index}.quantity`);
      return { sku: line.sku, title: line.title, vendor: line.vendor, quantity: line.quantity, unitPriceMinor };
    }),
    ...(order.status === 'cancelled' && { cancelled: true as const }),
    // Lines partly or wholly cancelled while the order is not (their webhook may be lost or late).
    ...(order.status !== 'cancelled' && cancelledBefore(order.lines.map((line) => ({ ...line, cancelled: line.cancelledQuantity ?? 0 })), order.updatedAt)),
  };
}

function readFulfillment(body: unknown): SourceFulfillment {
  const fulfillment = parsePayload(fulfillmentSchema, body, FULFILLMENT);
  return {
    sourceOrderId: fulfillment.orderId,
    fulfillmentId: null,
    tracking: {
      numbers: distinct(fulfillment.trackingNumbers),
      urls: trackingLinks(fulfillment.trackingUrls),
      company: fulfillment.carrier,
    },
  };
}

function orderRequest(order: SupplierOrder) {
  return {
    reference: order.reference,
    currency: order.currency,
    lines: order.lines.map((line) => ({
      sku: line.sku,
      title: line.title,
      quantity: line.quantity,
      unitPrice: fromMinorUnits(line.unitPriceMinor, order.currency),
    })),
    shippingAddress: order.shippingAddress ?? undefined,
    email: order.email ?? undefined,
  };
}

function fulfillmentRequest(tracking: Tracking) {
  return {
    trackingNumbers: tracking.numbers,
    trackingUrls: tracking.urls,
    carrier: tracking.company ?? undefined,
    notifyCustomer: true,
  };
}
