import { orderFulfillmentsPlatformA } from './order-fulfillments.ts';
import { z } from 'zod';
import { fromMinorUnits } from '../money.ts';
import type { PostalAddress, ResellerOrder, SourceFulfillment, SupplierOrder, Tracking } from '../orders/types.ts';
import { type HttpClientSettings, LIST_PAGE, PlatformHttpClient, type ResponseHeaders } from './http.ts';
import { cancelledBefore, listedOrder, nextLink, pageEntries, readShrinking, timestamp, withLimit } from './listing.ts';
import { listShipmentsPlatformA, listUpdatedPlatformA, readListedPlatformA } from './updated.ts';
import { anyId, assertLineTotal, distinct, lineText, numericId, optionalText, orderCurrency, parsePayload, platformAFulfillmentShipped, postalAddress, priceMinor, quantity, stringList, trackingLinks } from './payload.ts';
import type { ListedOrder, PlatformAdapter, StoreConnection } from './types.ts';
import { createdLines, platformACancelling } from './cancelling.ts';

const API = '/admin/api/2025-01';
const ORDER = 'platform_a order';
const FULFILLMENT = 'platform_a fulfillment';
const SYNC_TAG = 'reseller-sync';
/** The platform's largest page. */
const LIST_LIMIT = 250;

const addressSchema = z.object({
  name: optionalText,
  address1: optionalText,
  address2: optionalText,
  city: optionalText,
  province: optionalText,
  zip: optionalText,
  country_code: optionalText,
  phone: optionalText,
});

const orderSchema = z.object({
  id: numericId,
  currency: orderCurrency,
  email: optionalText,
  shipping_address: addressSchema.nullish(),
  cancelled_at: z.string().nullish(),
  updated_at: z.unknown(),
  line_items: z.array(
    // `fulfillable_quantity`: of `quantity`, what is neither shipped nor cancelled (a refund with restock_type cancel).
    z.object({ sku: lineText, title: z.string(), vendor: lineText, quantity, price: z.string(), fulfillable_quantity: z.number().int().nonnegative().nullish() }),
  ),
});

const fulfillmentSchema = z.object({
  id: numericId,
  order_id: numericId,
  status: z.string().nullish(),
  tracking_company: optionalText,
  tracking_number: optionalText,
  tracking_numbers: stringList,
  tracking_url: optionalText,
  tracking_urls: stringList,
});

const listingFields = z
  .object({ id: numericId, created_at: timestamp(false), cancelled_at: z.string().nullish() })
  .transform((order) => ({ externalOrderId: order.id, createdAt: order.created_at, cancelled: !!order.cancelled_at }));

const orderResponse = z.object({ order: z.unknown() });
const orderListResponse = z.object({ orders: z.unknown() });
const createdOrderResponse = z.object({ order: z.object({ id: anyId, line_items: createdLines }) });
const createdFulfillmentResponse = z.object({ fulfillment: z.object({ id: anyId }) });

export function createPlatformAAdapter(settings: HttpClientSettings): PlatformAdapter {
  const http = new PlatformHttpClient({
    ...settings,
    platform: 'platform_a',
    authHeaders: (accessToken) => ({ 'X-Platform-Access-Token': accessToken }),
  });
  return {
    platform: 'platform_a',
    needsTrackingNumber: false,
    fulfillmentCalls: () => 1,
    getOrder: (store, orderId) =>
      http.get(store, `${API}/orders/${encodeURIComponent(orderId)}.json`, (body) =>
        readOrder(parsePayload(orderResponse, body, `${ORDER} response`).order),
      ),
    createOrder: (store, order, idempotencyKey) =>
      http.post(store, `${API}/orders.json`, { order: orderRequest(order) }, idempotencyKey, (body, _headers, status) => {
        const created = parsePayload(createdOrderResponse, body, `created ${ORDER}`).order;
        return { id: created.id, status, lines: created.line_items };
      }),
    createFulfillment: (store, orderId, tracking, idempotencyKey) =>
      http.post(
        store,
        `${API}/orders/${encodeURIComponent(orderId)}/fulfillments.json`,
        { fulfillment: fulfillmentRequest(tracking) },
        idempotencyKey,
        (body, _headers, status) => ({ id: parsePayload(createdFulfillmentResponse, body, `created ${FULFILLMENT}`).fulfillment.id, status }),
      ),
    listOrders: (store, since) => listOrders(http, store, since),
    listUpdatedOrders: (store, since, cursor) => listUpdatedPlatformA(http, store, since, cursor),
    listOrderFulfillments: (store, orderId) => orderFulfillmentsPlatformA(http, store, orderId),
    readListedOrder: (store, orderId) => readListedPlatformA(http, store, orderId),
    listShipments: (store, orderId) => listShipmentsPlatformA(http, store, orderId),
    parseOrderWebhook: readOrder,
    parseFulfillmentWebhook: readFulfillment,
    ...platformACancelling(http),
  };
}

/**
 * Cursor paging: the first request carries the filters; each further page is the `Link` header's
 * `rel="next"` URL exactly as given (with `page_info`, the platform refuses any other filter but
 * `limit`). A page whose answer is over the list page's bound is read again with a smaller `limit`
 * (readShrinking), and the list goes on with it.
 */
async function* listOrders(http: PlatformHttpClient, store: StoreConnection, since: Date): AsyncGenerator<ListedOrder[]> {
  const first = (size: number) => {
    const query = new URLSearchParams({ status: 'any', created_at_min: since.toISOString(), limit: String(size) });
    return http.get(store, `${API}/orders.json?${query}`, readOrderPage, LIST_PAGE);
  };
  let { page, size } = await readShrinking(LIST_LIMIT, first);
  yield page.orders;
  while (page.next !== null) {
    const next = page.next;
    ({ page, size } = await readShrinking(size, (asked) => http.getUrl(store, asked < LIST_LIMIT ? withLimit(next, asked) : next, readOrderPage, LIST_PAGE)));
    yield page.orders;
  }
}

function readOrderPage(body: unknown, headers: ResponseHeaders): { orders: ListedOrder[]; next: string | null } {
  const entries = pageEntries(parsePayload(orderListResponse, body, `${ORDER} list`).orders, `${ORDER} list`);
  return {
    orders: entries.map((entry) => listedOrder(entry, listingFields, readOrder, ORDER)),
    next: nextLink(headers('link')),
  };
}

function readOrder(body: unknown): ResellerOrder {
  const order = parsePayload(orderSchema, body, ORDER);
  return {
    externalOrderId: order.id,
    currency: order.currency,
    email: order.email,
    shippingAddress: order.shipping_address ? fromPlatformAddress(order.shipping_address) : null,
    lines: order.line_items.map((line, index) => {
      const unitPriceMinor = priceMinor(line.price, order.currency, ORDER, `line_items.${index}.price`);
      assertLineTotal(unitPriceMinor, line.quantity, order.currency, ORDER, `line_items.${index}.quantity`);
      return { sku: line.sku, title: line.title, vendor: line.vendor, quantity: line.quantity, unitPriceMinor };
    }),
    ...(order.cancelled_at && { cancelled: true as const }),
    // Lines no longer open while the order is not cancelled: a refund's cancelled quantities (its
    // refunds/create may be lost or late). The Order does not carry its refunds (platforms.md), so a
    // quantity the merchant shipped by hand counts here too: it is not for the supplier to ship either.
    ...(!order.cancelled_at &&
      cancelledBefore(order.line_items.map((line) => ({ ...line, cancelled: line.fulfillable_quantity == null ? 0 : line.quantity - line.fulfillable_quantity })), order.updated_at)),
  };
}

/** The fulfillment's shipment, or null when its `status` says it shipped nothing (cancelled, error, failure). */
function readFulfillment(body: unknown): SourceFulfillment | null {
  const fulfillment = parsePayload(fulfillmentSchema, body, FULFILLMENT);
  if (!platformAFulfillmentShipped(fulfillment.status)) return null;
  return {
    sourceOrderId: fulfillment.order_id,
    fulfillmentId: fulfillment.id,
    tracking: {
      numbers: distinct([fulfillment.tracking_number, ...fulfillment.tracking_numbers]),
      urls: trackingLinks([fulfillment.tracking_url, ...fulfillment.tracking_urls]),
      company: fulfillment.tracking_company,
    },
  };
}

function orderRequest(order: SupplierOrder) {
  return {
    line_items: order.lines.map((line) => ({
      sku: line.sku,
      title: line.title,
      quantity: line.quantity,
      price: fromMinorUnits(line.unitPriceMinor, order.currency),
    })),
    email: order.email ?? undefined,
    shipping_address: order.shippingAddress ? toPlatformAddress(order.shippingAddress) : undefined,
    currency: order.currency,
    tags: SYNC_TAG,
    note_attributes: [
      { name: 'reseller_order_id', value: order.resellerOrderId },
      { name: 'sync_reference', value: order.reference },
    ],
  };
}

function fulfillmentRequest(tracking: Tracking) {
  return {
    tracking_number: tracking.numbers[0],
    tracking_numbers: tracking.numbers,
    tracking_url: tracking.urls[0],
    tracking_urls: tracking.urls,
    tracking_company: tracking.company ?? undefined,
    notify_customer: true,
  };
}

function fromPlatformAddress({ country_code, ...rest }: z.infer<typeof addressSchema>): PostalAddress | null {
  return postalAddress({ ...rest, countryCode: country_code });
}

function toPlatformAddress({ countryCode, ...rest }: PostalAddress) {
  return { ...rest, country_code: countryCode };
}
