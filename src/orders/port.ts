import type { Trx } from '../db/sql.ts';
import type { CancelledBefore, ResellerOrder } from './types.ts';

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

/** One of a store's orders. */
export interface OrderRef {
  resellerStoreId: string;
  externalOrderId: string;
}

/**
 * An order whose jobs a routing (or a manual job) just inserted; `cancelledBefore`: what the storefront
 * order it routed shows cancelled of its lines (a listed or read order), recorded as the order's
 * cancellation of those lines and applied with the others.
 */
export interface OrderAtRouting extends OrderRef {
  ownerId: string;
  cancelledBefore?: CancelledBefore | null | undefined;
}

/** One line of a storefront cancellation: a reseller line by SKU and the quantity cancelled. */
export interface CancelledOrderLine {
  sku: string;
  quantity: number;
  /**
   * The reseller line's vendor when the signal names the line itself (a platform_a refund's line
   * item): only jobs of that vendor hold it, even when another vendor's line has the same SKU. ''
   * (the line names no vendor, so no supplier holds it) is such a vendor too: it cancels nothing at
   * any supplier. Absent: the signal does not say whose line it is (any supplier's with the SKU).
   */
  vendor?: string;
}

/** A storefront's cancellation of one of its orders, or of some of its lines (order-changes.md, "Signals in"). */
export interface StorefrontCancellation {
  externalOrderId: string;
  /** `order`: the whole order; `lines`: the quantities of `lines` only. */
  scope: 'order' | 'lines';
  /** The lines cancelled, by SKU; empty for the whole order. */
  lines: CancelledOrderLine[];
  /**
   * Identifies the signal among the store's: a second call with the same key is applied again (a
   * no-op once applied) but recorded and audited once. A webhook's id; the watch's own key.
   */
  dedupeKey: string;
  /**
   * When the storefront made it, when the signal says (a lines signal's webhook): one made no later
   * than the storefront order routing read (`CancelledBefore.asOf`) is among the quantities that
   * routing left out already, and is not applied again (src/cancellations/listed.ts); one without a
   * time is held when its quantities fit in what such a read has left.
   */
  occurredAt?: Date | null;
}

/** What brought a cancellation: recorded in its audit entry (`metadata`). */
export type CancellationVia =
  | { source: 'webhook'; topic: string; webhookId: string | null }
  | { source: 'watch'; [detail: string]: unknown }
  | { source: 'reconciliation'; reconciliationId: string };

/** What a cancellation came to. */
export interface OrderCancelled {
  /** False when this signal (its `dedupeKey`) was received before. */
  recorded: boolean;
  /** Whether the order had been routed: if not, it is recorded, and its routing will end or cut its jobs. */
  routed: boolean;
  /** The sync jobs this cancellation reached (a cancellation each). */
  syncJobIds: string[];
}

/**
 * The storefront cancellation, one more intake of the order module: the order webhook
 * (orders/cancelled, refunds/create, orders/updated) and the divergence watch call it. Implemented
 * by the order router (src/orders/routing.ts) with the cancellations feature behind it.
 */
export interface OrderCancelling {
  /**
   * Cancels an order of `store`, or some of its lines: one cancellation per affected sync job
   * (retried work, src/cancellations/). An order not routed yet is recorded as cancelled: its
   * routing (webhook or reconciliation) then ends its jobs as `not_placed`, in its transaction.
   */
  cancel(store: OrderStore, cancellation: StorefrontCancellation, via: CancellationVia): Promise<OrderCancelled>;
}

/**
 * What the order module asks of the cancellations feature, handed in by the composition root
 * (src/services.ts): the cancellation itself, and, inside a routing's transaction, the cancellations
 * recorded before the order was routed.
 */
export interface OrderCancellations {
  cancelOrder(store: OrderStore, cancellation: StorefrontCancellation, via: CancellationVia): Promise<OrderCancelled>;
  /** The keys of these orders' cancellation locks, which the routing's job insert takes (see `applyAtRouting`). */
  lockKeysOf(orders: OrderRef[]): string[];
  /**
   * Called by the routing transaction once these orders' jobs are inserted (orders routed for the
   * first time), the insert having taken each order's cancellation lock (`lockKeysOf`): applies the
   * cancellations recorded for it, so a job of an order cancelled first is never placed (ended
   * `not_placed`, or cut by its lines).
   */
  applyAtRouting(trx: Trx, orders: OrderAtRouting[]): Promise<void>;
}
