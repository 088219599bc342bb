import { orderFulfillmentsPlatformB } from './order-fulfillments.ts';
import { z } from 'zod';
import { fromMinorUnits } from '../money.ts';
import type {
  OrderLine,
  PostalAddress,
  ResellerOrder,
  SourceFulfillment,
  SupplierOrder,
  Tracking,
} from '../orders/types.ts';
import { type HttpClientSettings, LIST_PAGE, PlatformHttpClient, type ResponseHeaders } from './http.ts';
import { listedOrder, pageEntries, readShrinking, timestamp, totalPagesOf } from './listing.ts';
import { listShipmentsPlatformB, listUpdatedPlatformB, readListedPlatformB } from './updated.ts';
import { atPageSize, firstPosition, followByTime, type TimePosition } from './time-paging.ts';
import { anyId, assertLineTotal, distinct, lineText, numericId, optionalText, orderCurrency, parsePayload, postalAddress, priceMinor, quantity, roundedPriceMinor, trackingLinks, unitPriceOfTotal } from './payload.ts';
import { type Created, type ListedOrder, PayloadError, PlatformError, type PlatformAdapter, type StoreConnection } from './types.ts';
import { createdLines, platformBCancelling } from './cancelling.ts';

const API = '/wp-json/wc/v3';
const ORDER = 'platform_b order';
const FULFILLMENT = 'platform_b fulfillment';
/** The platform's largest page. */
const LIST_PER_PAGE = 100;

const lineSchema = z.object({
  sku: lineText,
  name: z.string(),
  quantity,
  price: z.number().nullish(),
  total: z.string().nullish(),
  meta_data: z
    .array(z.object({ key: z.string(), value: z.unknown() }))
    .nullish()
    .transform((entries) => entries ?? []),
});

const orderSchema = z.object({
  id: numericId,
  status: z.string().nullish(),
  currency: orderCurrency,
  billing: z.object({ email: optionalText }).nullish(),
  shipping: z
    .object({
      first_name: optionalText,
      last_name: optionalText,
      address_1: optionalText,
      address_2: optionalText,
      city: optionalText,
      state: optionalText,
      postcode: optionalText,
      country: optionalText,
      phone: optionalText,
    })
    .nullish(),
  line_items: z.array(lineSchema),
});

const fulfillmentSchema = z.object({
  order_id: numericId,
  tracking_provider: optionalText,
  tracking_number: optionalText,
  tracking_link: optionalText,
});

const listingFields = z
  .object({ id: numericId, status: z.string(), date_created_gmt: timestamp(true) })
  .transform((order) => ({
    externalOrderId: order.id,
    createdAt: order.date_created_gmt,
    // As its webhook and the updated list read it: a refunded order is cancelled too.
    cancelled: order.status === 'cancelled' || order.status === 'refunded',
  }));

const createdOrderResponse = z.object({ id: anyId, line_items: createdLines });
const createdTrackingResponse = z.object({ tracking_id: anyId });

type PlatformLine = z.infer<typeof lineSchema>;
type PlatformShipping = NonNullable<z.infer<typeof orderSchema>['shipping']>;

export function createPlatformBAdapter(settings: HttpClientSettings): PlatformAdapter {
  const http = new PlatformHttpClient({
    ...settings,
    platform: 'platform_b',
    authHeaders: (accessToken) => ({ Authorization: `Bearer ${accessToken}` }),
  });

  /** The platform takes one tracking number per call; the first tracking's id stands for the fulfillment. */
  async function createFulfillment(
    store: StoreConnection,
    orderId: string,
    tracking: Tracking,
    idempotencyKey: string,
  ): Promise<Created> {
    const path = `${API}/orders/${encodeURIComponent(orderId)}/shipment-trackings`;
    let first: Created | undefined;
    for (const [index, number] of tracking.numbers.entries()) {
      const key = tracking.numbers.length > 1 ? `${idempotencyKey}-${index}` : idempotencyKey;
      const body = {
        tracking_provider: tracking.company ?? undefined,
        tracking_number: number,
        tracking_link: tracking.urls[index],
      };
      const created = await http.post(store, path, body, key, (response, _headers, status) => ({
        id: parsePayload(createdTrackingResponse, response, `created ${FULFILLMENT}`).tracking_id,
        status,
      }));
      first ??= created;
    }
    if (first === undefined) {
      throw new PlatformError(`platform_b ${store.shopDomain}: a shipment needs at least one tracking number`, false);
    }
    return first;
  }

  return {
    platform: 'platform_b',
    needsTrackingNumber: true,
    /** One per tracking number (see createFulfillment). */
    fulfillmentCalls: (tracking) => Math.max(1, tracking.numbers.length),
    getOrder: (store, orderId) => http.get(store, `${API}/orders/${encodeURIComponent(orderId)}`, readOrder),
    createOrder: (store, order, idempotencyKey) =>
      http.post(store, `${API}/orders`, orderRequest(order), idempotencyKey, (body, _headers, status) => {
        const created = parsePayload(createdOrderResponse, body, `created ${ORDER}`);
        // Kept as platform_a's are, although platform_b cancels whole orders only (no call names a line).
        return { id: created.id, status, lines: created.line_items };
      }),
    createFulfillment,
    listOrders: (store, since) => listOrders(http, store, since),
    listUpdatedOrders: (store, since, cursor) => listUpdatedPlatformB(http, store, since, cursor),
    listOrderFulfillments: (store, orderId) => orderFulfillmentsPlatformB(http, store, orderId),
    readListedOrder: (store, orderId) => readListedPlatformB(http, store, orderId),
    listShipments: (store, orderId) => listShipmentsPlatformB(http, store, orderId),
    parseOrderWebhook: readOrder,
    parseFulfillmentWebhook: readFulfillment,
    ...platformBCancelling(http),
  };
}

/**
 * `after&orderby=date&order=asc`, followed by the creation time of the last order listed
 * (src/platforms/time-paging.ts), up to the `X-WP-TotalPages` of the latest answer: an order trashed
 * while the list is read shifts the later ones back, and paging by number would skip one. A page
 * whose answer is over the list page's bound is read again with a smaller `per_page`
 * (readShrinking), and the list goes on with it.
 */
async function* listOrders(http: PlatformHttpClient, store: StoreConnection, since: Date): AsyncGenerator<ListedOrder[]> {
  let size = LIST_PER_PAGE;
  for (let position: TimePosition | null = firstPosition(since); position !== null; ) {
    const from: TimePosition = position;
    const read = await readShrinking(size, (asked) => {
      const query = new URLSearchParams({
        after: new Date(from.after).toISOString(),
        per_page: String(asked),
        page: String(atPageSize(from, size, asked).page),
        orderby: 'date',
        order: 'asc',
      });
      return http.get(store, `${API}/orders?${query}`, readOrderPage, LIST_PAGE);
    });
    const at = atPageSize(from, size, read.size);
    size = read.size;
    const { orders, totalPages } = read.page;
    // Without the header (a proxy may drop it), a short page is the last one.
    const last = totalPages === null ? orders.length < size : at.page >= totalPages;
    const page: { fresh: ListedOrder[]; next: TimePosition | null } = followByTime(at, orders, (order) => ({ id: order.externalOrderId, time: order.createdAt }), last);
    yield page.fresh;
    position = page.next;
  }
}

function readOrderPage(body: unknown, headers: ResponseHeaders): { orders: ListedOrder[]; totalPages: number | null } {
  const totalPages = totalPagesOf(headers, `${ORDER} list`);
  return { orders: pageEntries(body, `${ORDER} list`).map((entry) => listedOrder(entry, listingFields, readOrder, ORDER)), totalPages };
}

function readOrder(body: unknown): ResellerOrder {
  const order = parsePayload(orderSchema, body, ORDER);
  return {
    externalOrderId: order.id,
    currency: order.currency,
    email: order.billing?.email ?? null,
    shippingAddress: order.shipping ? fromPlatformShipping(order.shipping) : null,
    lines: order.line_items.map((line, index) => readLine(line, index, order.currency)),
    // As its webhook and the lists read it: a refunded order is cancelled too.
    ...((order.status === 'cancelled' || order.status === 'refunded') && { cancelled: true as const }),
  };
}

function readLine(line: PlatformLine, index: number, currencyCode: string): OrderLine {
  // A line without a vendor entry is kept unroutable (see lineText), like a blank vendor.
  const vendorEntry = line.meta_data.find((entry) => entry.key === 'vendor')?.value;
  const vendor = typeof vendorEntry === 'string' ? vendorEntry : '';
  return { sku: line.sku, title: line.name, vendor, quantity: line.quantity, ...linePrice(line, index, currencyCode) };
}

/**
 * The exact `total` string prices the line whenever it is there; `price` is only the platform's
 * float total ÷ quantity (1.005 beside a total of "1.01"), used, rounded, for a line without one.
 */
function linePrice(line: PlatformLine, index: number, currencyCode: string): Pick<OrderLine, 'unitPriceMinor' | 'totalMinor'> {
  const path = `line_items.${index}`;
  if (line.total != null) {
    const totalMinor = priceMinor(line.total, currencyCode, ORDER, `${path}.total`);
    return { unitPriceMinor: unitPriceOfTotal(totalMinor, line.quantity), totalMinor };
  }
  if (line.price == null) {
    throw new PayloadError(`invalid ${ORDER}: ${path}: needs a price or a total`, `${path}.price`);
  }
  const unitPriceMinor = roundedPriceMinor(line.price, currencyCode, ORDER, `${path}.price`);
  assertLineTotal(unitPriceMinor, line.quantity, currencyCode, ORDER, `${path}.quantity`);
  return { unitPriceMinor };
}

function readFulfillment(body: unknown): SourceFulfillment {
  const fulfillment = parsePayload(fulfillmentSchema, body, FULFILLMENT);
  return {
    sourceOrderId: fulfillment.order_id,
    fulfillmentId: null,
    tracking: {
      numbers: distinct([fulfillment.tracking_number]),
      urls: trackingLinks([fulfillment.tracking_link]),
      company: fulfillment.tracking_provider,
    },
  };
}

function orderRequest(order: SupplierOrder) {
  return {
    status: 'processing',
    line_items: order.lines.map((line) => ({
      sku: line.sku,
      name: line.title,
      quantity: line.quantity,
      // The platform takes a line total: the exact one when the line came with it.
      total: fromMinorUnits(line.totalMinor ?? line.unitPriceMinor * line.quantity, order.currency),
    })),
    shipping: order.shippingAddress ? toPlatformShipping(order.shippingAddress) : undefined,
    billing: order.email ? { email: order.email } : undefined,
    currency: order.currency,
    meta_data: [
      { key: 'sync_reference', value: order.reference },
      { key: 'reseller_order_id', value: order.resellerOrderId },
    ],
  };
}

function fromPlatformShipping(shipping: PlatformShipping): PostalAddress | null {
  const name = [shipping.first_name, shipping.last_name].filter(Boolean).join(' ');
  return postalAddress({
    name: name || null,
    address1: shipping.address_1,
    address2: shipping.address_2,
    city: shipping.city,
    province: shipping.state,
    zip: shipping.postcode,
    countryCode: shipping.country,
    phone: shipping.phone,
  });
}

/** The platform's address fields are strings, so unknown parts are left out rather than sent as null. */
function toPlatformShipping(address: PostalAddress) {
  const [firstName, ...lastNames] = (address.name ?? '').trim().split(/\s+/);
  return {
    first_name: firstName || undefined,
    last_name: lastNames.join(' ') || undefined,
    address_1: address.address1 ?? undefined,
    address_2: address.address2 ?? undefined,
    city: address.city ?? undefined,
    state: address.province ?? undefined,
    postcode: address.zip ?? undefined,
    country: address.countryCode ?? undefined,
    phone: address.phone ?? undefined,
  };
}
