import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const ROUTING_SOURCES = ['webhook', 'reconciliation'] as const;
export type RoutingSource = (typeof ROUTING_SOURCES)[number];

/**
 * A reseller order that was routed, whether or not any supplier matched it: written in the routing
 * transaction by whichever came first (its webhook, a redelivery, reconciliation), so reconciliation
 * can skip routed orders with a read, and knows whether it was the one that routed an order.
 */
export const RoutedOrder = defineEntity({
  name: 'RoutedOrder',
  tableName: 'routed_orders',
  properties: {
    resellerStoreId: p.string().primary(),
    externalOrderId: p.string().length(32).primary(),
    source: p.enum(ROUTING_SOURCES),
    routedAt: p.datetime(),
  },
});
export type RoutedOrder = InferEntity<typeof RoutedOrder>;
