/** Platform-shaped order and fulfillment objects, exactly as the platforms send them (spec/platforms.md). */
import { fromMinorUnits, toMinorUnits } from '../../src/money.ts';
import type { Platform, PostalAddress } from '../../src/orders/types.ts';

export type JsonObject = Record<string, unknown>;

export interface OrderLineInput {
  sku: string;
  title: string;
  vendor: string;
  quantity: number;
  /** Unit price as a decimal string, e.g. "12.50". */
  price: string;
}

export interface OrderPayloadInput {
  id: number | string;
  /** Defaults to USD. */
  currency?: string;
  email?: string | null;
  /** Defaults to SAMPLE_ADDRESS; null for an order that ships nothing. */
  shippingAddress?: PostalAddress | null;
  lines: OrderLineInput[];
  /** ISO-8601 UTC; defaults to now. */
  createdAt?: string;
  /** A cancelled order (platform_a `cancelled_at`, platform_b and custom `status`). */
  cancelled?: boolean;
}

export interface FulfillmentPayloadInput {
  orderId: number | string;
  /** Only platform_a's fulfillment carries its own id. */
  fulfillmentId?: number;
  trackingNumbers: string[];
  trackingUrls?: string[];
  company?: string | null;
}

export const SAMPLE_ADDRESS: PostalAddress = {
  name: 'Ada Lovelace',
  address1: '12 Analytical Row',
  address2: null,
  city: 'London',
  province: 'England',
  zip: 'EC1A 1BB',
  countryCode: 'GB',
  phone: '+44 20 7946 0000',
};

/** Ids of the objects inside orders (lines, variants, meta entries). */
let nextObjectId = 1_000_000;

/** The order object a platform returns from GET and posts as an orders/create webhook body. */
export function buildOrderPayload(platform: Platform, input: OrderPayloadInput): JsonObject {
  const order = normalised(input);
  switch (platform) {
    case 'platform_a':
      return platformAOrder(order);
    case 'platform_b':
      return platformBOrder(order);
    case 'custom':
      return customOrder(order);
  }
}

/** The fulfillment object a platform posts as a fulfillments/create webhook body. */
export function buildFulfillmentPayload(platform: Platform, input: FulfillmentPayloadInput): JsonObject {
  const urls = input.trackingUrls ?? [];
  const company = input.company ?? null;
  switch (platform) {
    case 'platform_a':
      return {
        id: input.fulfillmentId ?? nextObjectId++,
        order_id: Number(input.orderId),
        status: 'success',
        tracking_company: company,
        tracking_number: input.trackingNumbers[0] ?? null,
        tracking_numbers: input.trackingNumbers,
        tracking_url: urls[0] ?? null,
        tracking_urls: urls,
        line_items: [],
      };
    case 'platform_b':
      return {
        order_id: Number(input.orderId),
        tracking_provider: company ?? '',
        tracking_number: input.trackingNumbers[0] ?? '',
        tracking_link: urls[0] ?? '',
      };
    case 'custom':
      return { orderId: String(input.orderId), trackingNumbers: input.trackingNumbers, trackingUrls: urls, carrier: company };
  }
}

type NormalisedInput = Required<OrderPayloadInput>;

function normalised(input: OrderPayloadInput): NormalisedInput {
  return {
    id: input.id,
    lines: input.lines,
    currency: input.currency ?? 'USD',
    email: input.email ?? null,
    shippingAddress: input.shippingAddress === undefined ? SAMPLE_ADDRESS : input.shippingAddress,
    createdAt: input.createdAt ?? new Date().toISOString(),
    cancelled: input.cancelled ?? false,
  };
}

function platformAOrder(order: NormalisedInput): JsonObject {
  const address = order.shippingAddress;
  return {
    id: Number(order.id),
    email: order.email,
    currency: order.currency,
    created_at: order.createdAt,
    updated_at: order.createdAt,
    cancelled_at: order.cancelled ? order.createdAt : null,
    cancel_reason: order.cancelled ? 'customer' : null,
    fulfillment_status: null,
    fulfillments: [],
    financial_status: 'paid',
    total_price: orderTotal(order),
    line_items: order.lines.map((line) => ({
      id: nextObjectId++,
      variant_id: nextObjectId++,
      sku: line.sku,
      title: line.title,
      vendor: line.vendor,
      quantity: line.quantity,
      fulfillable_quantity: order.cancelled ? 0 : line.quantity,
      price: line.price,
    })),
    shipping_address: address && {
      name: address.name,
      address1: address.address1,
      address2: address.address2,
      city: address.city,
      province: address.province,
      zip: address.zip,
      country_code: address.countryCode,
      phone: address.phone,
    },
    customer: order.email === null ? null : { email: order.email },
  };
}

/** This platform writes absent text as "" and prices as a float `price` beside an exact `total`. */
function platformBOrder(order: NormalisedInput): JsonObject {
  const address = order.shippingAddress;
  const [firstName = '', ...lastNames] = address?.name?.split(' ') ?? [];
  const person = { first_name: firstName, last_name: lastNames.join(' ') };
  return {
    id: Number(order.id),
    status: order.cancelled ? 'cancelled' : 'processing',
    currency: order.currency,
    date_created: order.createdAt,
    date_created_gmt: gmt(order.createdAt),
    total: orderTotal(order),
    billing: { ...person, email: order.email ?? '' },
    shipping: {
      ...person,
      company: '',
      address_1: address?.address1 ?? '',
      address_2: address?.address2 ?? '',
      city: address?.city ?? '',
      state: address?.province ?? '',
      postcode: address?.zip ?? '',
      country: address?.countryCode ?? '',
      phone: address?.phone ?? '',
    },
    line_items: order.lines.map((line) => {
      const total = lineTotal(line, order.currency);
      return {
        id: nextObjectId++,
        name: line.title,
        sku: line.sku,
        quantity: line.quantity,
        price: Number(line.price),
        subtotal: total,
        total,
        meta_data: [{ id: nextObjectId++, key: 'vendor', value: line.vendor }],
      };
    }),
    meta_data: [],
  };
}

function customOrder(order: NormalisedInput): JsonObject {
  return {
    id: String(order.id),
    status: order.cancelled ? 'cancelled' : 'open',
    currency: order.currency,
    email: order.email,
    createdAt: order.createdAt,
    updatedAt: order.createdAt,
    cancelledAt: order.cancelled ? order.createdAt : null,
    lines: order.lines.map((line) => ({
      sku: line.sku,
      title: line.title,
      vendor: line.vendor,
      quantity: line.quantity,
      cancelledQuantity: order.cancelled ? line.quantity : 0,
      unitPrice: line.price,
    })),
    fulfillments: [],
    shippingAddress: order.shippingAddress,
  };
}

/** platform_b's `*_gmt` form: UTC without a zone designator or fraction, `2026-11-23T10:15:00`. */
export function gmt(iso: string): string {
  return new Date(iso).toISOString().slice(0, 19);
}

/** The creation time of a platform's order object, in milliseconds. */
export function orderCreatedAt(platform: Platform, order: JsonObject): number {
  const field = { platform_a: order.created_at, platform_b: order.date_created_gmt, custom: order.createdAt }[platform];
  if (typeof field !== 'string') return Number.NaN;
  return Date.parse(platform === 'platform_b' && !/[zZ]|[+-]\d\d:?\d\d$/.test(field) ? `${field}Z` : field);
}

/** Marks a platform's order object cancelled, as the platform does when the merchant cancels it. */
export function cancelledOrder(platform: Platform, order: JsonObject, at = new Date().toISOString()): JsonObject {
  switch (platform) {
    case 'platform_a':
      return { ...order, cancelled_at: at };
    case 'platform_b':
      return { ...order, status: 'cancelled' };
    case 'custom':
      return { ...order, status: 'cancelled', cancelledAt: at };
  }
}

function lineTotal(line: OrderLineInput, currency: string): string {
  return fromMinorUnits(toMinorUnits(line.price, currency) * line.quantity, currency);
}

function orderTotal(order: NormalisedInput): string {
  const minor = order.lines.reduce((sum, line) => sum + toMinorUnits(line.price, order.currency) * line.quantity, 0);
  return fromMinorUnits(minor, order.currency);
}
