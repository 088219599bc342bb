/**
 * The fulfillments an order already shows, as each platform identifies them (platforms.md):
 * platform_a the order's `fulfillments` (each with its `id`; `GET /orders/{id}.json` embeds them),
 * platform_b its shipment trackings (`tracking_id`, one number each), custom the order's
 * `fulfillments` (each with its `id`). Read before pushing tracking again when an earlier push's
 * answer was lost and its Idempotency-Key may be forgotten (src/fulfillments/attempt.ts).
 */
import { z } from 'zod';
import type { PlatformHttpClient } from './http.ts';
import { pageEntries } from './listing.ts';
import { anyId, distinct, optionalText, parsePayload, stringList } from './payload.ts';
import type { OrderFulfillment, StoreConnection } from './types.ts';

const A_API = '/admin/api/2025-01';
const B_API = '/wp-json/wc/v3';

const platformAOrder = z.object({
  fulfillments: z
    .array(z.object({ id: anyId.nullish(), tracking_number: optionalText, tracking_numbers: stringList, tracking_url: optionalText, tracking_urls: stringList }))
    .nullish()
    .transform((entries) => entries ?? []),
});

const platformBTracking = z.object({ tracking_id: anyId.nullish(), tracking_number: optionalText, tracking_link: optionalText });

const customOrder = z.object({
  fulfillments: z
    .array(z.object({ id: anyId.nullish(), trackingNumbers: stringList, trackingUrls: stringList }))
    .nullish()
    .transform((entries) => entries ?? []),
});

export function orderFulfillmentsPlatformA(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<OrderFulfillment[]> {
  return http.get(store, `${A_API}/orders/${encodeURIComponent(orderId)}.json`, (body) => {
    const order = parsePayload(z.object({ order: platformAOrder }), body, 'platform_a order response').order;
    return order.fulfillments.map((fulfillment) => ({
      id: fulfillment.id ?? null,
      trackingNumbers: distinct([fulfillment.tracking_number, ...fulfillment.tracking_numbers]),
      trackingUrls: distinct([fulfillment.tracking_url, ...fulfillment.tracking_urls]),
    }));
  });
}

export function orderFulfillmentsPlatformB(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<OrderFulfillment[]> {
  return http.get(store, `${B_API}/orders/${encodeURIComponent(orderId)}/shipment-trackings`, (body) =>
    pageEntries(body, 'platform_b shipment trackings').map((entry) => {
      const tracking = parsePayload(platformBTracking, entry, 'platform_b shipment tracking');
      return { id: tracking.tracking_id ?? null, trackingNumbers: distinct([tracking.tracking_number]), trackingUrls: distinct([tracking.tracking_link]) };
    }),
  );
}

export function orderFulfillmentsCustom(http: PlatformHttpClient, store: StoreConnection, orderId: string): Promise<OrderFulfillment[]> {
  return http.get(store, `/orders/${encodeURIComponent(orderId)}`, (body) =>
    parsePayload(customOrder, body, 'custom order response').fulfillments.map((fulfillment) => ({
      id: fulfillment.id ?? null,
      trackingNumbers: distinct(fulfillment.trackingNumbers),
      trackingUrls: distinct(fulfillment.trackingUrls),
    })),
  );
}
