import type { ResellerOrder } from './types.ts';

/** What routes an order: its webhook delivery, or a reconciliation run that listed it. */
export type RoutingVia = { source: 'webhook'; webhookId: string | null } | { source: 'reconciliation'; reconciliationId: string };

/** The reseller store an order came from. */
export interface OrderStore {
  id: string;
  ownerId: string;
}

/** The order's jobs, and whether this routing was the first of the order. */
export interface RoutedOrder {
  jobs: { id: string; created: boolean }[];
  firstRouting: boolean;
}

/**
 * The one way into routing a reseller order (src/orders/routing.ts). The order webhook and
 * reconciliation call it; storefront cancellations and the divergence watch are to call it too,
 * never the sync jobs' or routed orders' tables directly.
 */
export interface OrderRouting {
  /**
   * Routes an order: one sync job per active source store whose vendor tag matches a line. An order
   * is routed once: a later routing (a redelivery, reconciliation) gets the first one's jobs back.
   */
  route(store: OrderStore, order: ResellerOrder, via: RoutingVia): Promise<RoutedOrder>;
  /** Which of these orders of one store were routed already: a read, so skipping them writes nothing. */
  routedAmong(resellerStoreId: string, externalOrderIds: string[]): Promise<Set<string>>;
}
