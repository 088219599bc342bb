/** The service's own view of orders, independent of any platform's wire format. */

export { PLATFORMS, type Platform } from '../../contract/enums.ts';

/** Order ids the service keeps (sync_jobs.external_order_id); an order with another id is refused. */
export { EXTERNAL_ORDER_ID } from '../../contract/limits.ts';

export interface PostalAddress {
  name: string | null;
  address1: string | null;
  address2: string | null;
  city: string | null;
  province: string | null;
  zip: string | null;
  countryCode: string | null;
  phone: string | null;
}

/** One line of a reseller's order, as the storefront sold it. */
export interface OrderLine {
  sku: string;
  title: string;
  vendor: string;
  /** 1 to MAX_QUANTITY. */
  quantity: number;
  /** Unit price in the order currency's minor units (of a line priced by its total: total ÷ quantity, rounded). */
  unitPriceMinor: number;
  /**
   * The line's exact total in minor units, when the platform prices lines by their total
   * (platform_b): pricing then starts from it, so 10.00 for 3 stays 10.00 instead of 3 × 3.33.
   */
  totalMinor?: number;
  /**
   * The line's index among the storefront order's lines (0-based), set on a stored order once some of
   * its lines are left out (a manual job's read without the lines it shows cancelled whole:
   * src/orders/open.ts; a job's order cut: src/cancellations/cut.ts), so lines of two jobs' orders
   * compare in the storefront's frame (`linePosition`). Absent: the line's index in its order.
   */
  position?: number;
}

/** A line's index among the storefront order's lines: its `position`, else its index in the order at hand (stored whole). */
export const linePosition = (line: OrderLine, index: number): number => line.position ?? index;

export { MAX_QUANTITY } from '../../contract/limits.ts';

/** A customer's order on the reseller storefront, normalised from any platform. */
export interface ResellerOrder {
  /** Numeric order id on the reseller platform, as a string. */
  externalOrderId: string;
  currency: string;
  email: string | null;
  shippingAddress: PostalAddress | null;
  lines: OrderLine[];
  /**
   * Set when the platform's order shows it cancelled (platform_a `cancelled_at`, platform_b status
   * `cancelled` or `refunded`, custom status `cancelled`): such an order is never placed on a supplier.
   */
  cancelled?: true;
  /**
   * Quantities the storefront order already shows cancelled while the order itself is not (a custom
   * order's lines' `cancelledQuantity`): a partial cancellation whose own webhook may be lost, or come
   * after the order is routed. `lines` keep the quantities ordered; routing places the open ones
   * (src/orders/routing.ts records these as the order's cancellation `listed:`, src/cancellations/),
   * and a manual job's attempt places `openOrder(order)`. Never stored with a job's order.
   */
  cancelledBefore?: CancelledBefore;
}

/** What a storefront order read from its platform shows cancelled of its lines, and as of when. */
export interface CancelledBefore {
  /**
   * The time of the platform's copy of the order (custom `updatedAt`; the time it was read when the
   * order has none): every cancellation of its lines made until then is in `lines`.
   */
  asOf: Date;
  /** Per reseller line (SKU and vendor), the quantity cancelled; only lines with some cancelled. */
  lines: { sku: string; vendor: string; quantity: number }[];
}

/** A line sent to a supplier, after pricing rules were applied. */
export interface SupplierOrderLine {
  sku: string;
  title: string;
  quantity: number;
  unitPriceMinor: number;
  /** The exact line total, for a line priced by its total (see OrderLine); else unit price × quantity. */
  totalMinor?: number;
}

/** The part of a reseller order that one supplier (source store) fulfils. */
export interface SupplierOrder {
  /** Our sync job id; put on the supplier's order so it can be found again. */
  reference: string;
  /** The reseller platform's order id, for the supplier's information. */
  resellerOrderId: string;
  currency: string;
  email: string | null;
  shippingAddress: PostalAddress | null;
  lines: SupplierOrderLine[];
}

export interface Tracking {
  numbers: string[];
  urls: string[];
  company: string | null;
}

/** A fulfillment reported by a supplier's platform webhook. */
export interface SourceFulfillment {
  /** The supplier platform's order id (our sync job's sourceOrderId). */
  sourceOrderId: string;
  /** The platform's own fulfillment id when its payload carries one. */
  fulfillmentId: string | null;
  tracking: Tracking;
}
