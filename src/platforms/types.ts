import type { CancelledBefore, Platform, ResellerOrder, SourceFulfillment, SupplierOrder, Tracking } from '../orders/types.ts';

/** What a platform answered when it created something: its id, and the HTTP status it answered with (for the attempt's timeline). */
export interface Created {
  id: string;
  /** Null when the attempt made no call (e.g. a cancellation of an order never placed). */
  status: number | null;
  /**
   * An order's lines as the supplier's create answer gave them, with the supplier's own line ids
   * (a later refund names them: platforms.md). Null or absent when the answer carries no line ids
   * the service can keep (custom's answer promises only the order's id; its lines are cancelled by
   * SKU): the order is then read when a cancellation needs its lines.
   */
  lines?: SupplierLine[] | null;
}

/** A line of a supplier order as the service keeps it from the create answer (`sync_jobs.supplier_lines`). */
export interface SupplierLine {
  /** The supplier's own line id (platform_a's refund needs it); null where the platform has none. */
  lineId: string | null;
  sku: string;
  quantity: number;
}

/** What an adapter needs to call one store. The token is decrypted only for the call. */
export interface StoreConnection {
  /**
   * The key of the allowance its calls spend (src/pacing/): the store's credential, fingerprinted
   * (src/attempts/store-connection.ts `allowanceKeyOf`), so records sharing a credential share it and
   * a record of the same domain with another token does not.
   */
  storeId: string;
  platform: Platform;
  shopDomain: string;
  accessToken: string;
  /**
   * Turns the caller already waited for (a worker does, before it takes a job, one per call its
   * attempt makes to this store): each call spends one while any remain, then reserves its own.
   */
  heldTurns?: { remaining: number };
  /**
   * How long a call may wait for a turn it reserves itself (default: the adapters' longest inline
   * wait, 5 s); a turn further away fails the call unsent. Work that holds no worker slot (a
   * reconciliation run) may wait longer rather than fail while the store has a backlog.
   */
  maxTurnWaitMs?: number;
  /**
   * The caller's stop (a reconciliation run's or a watch pass's, aborted when its process stops:
   * SIGTERM): a call waiting for its turn stops waiting at once, unsent (PlatformError, `sent` false),
   * and gives the turn back, so the work is handed back promptly instead of sitting out a backlog.
   */
  stopping?: AbortSignal;
}

/** One order of a store's order list: what reconciliation needs to decide, and the order itself. */
export interface ListedOrder {
  externalOrderId: string;
  createdAt: Date;
  cancelled: boolean;
  /**
   * The order normalised by the same reader as its orders/create webhook, or the reason it could not
   * be read (the webhook would have been refused too) and the field at fault (its 400's `param`).
   */
  order: ResellerOrder | { invalid: string; param: string };
}

/** One line of a supplier order, as far as cancelling it goes. */
export interface SupplierOrderLineState {
  /** The supplier's own line id (platform_a's refund needs it); null where the platform has none. */
  lineId: string | null;
  sku: string;
  quantity: number;
  cancelledQuantity: number;
  fulfilledQuantity: number;
}

/** Where a supplier order stands: cancelled, shipped (`fulfilled`: every open unit), or still open. */
export interface SupplierOrderState {
  id: string;
  cancelled: boolean;
  /** `none`, `partial` (some units shipped) or `full` (nothing left to ship). */
  fulfillment: 'none' | 'partial' | 'full';
  lines: SupplierOrderLineState[];
}

/** A fulfillment an order shows: the platform's id for it (platform_b: the tracking's), its tracking numbers and links. */
export interface OrderFulfillment {
  id: string | null;
  trackingNumbers: string[];
  trackingUrls: string[];
}

/** What a lookup by reference answers when it stops at its page bound while the list goes on (`findOrderByReference`). */
export type LookupCut = 'fail' | 'not_found';

/** A quantity of one supplier line to cancel. */
export interface LineToCancel {
  lineId: string | null;
  sku: string;
  quantity: number;
}

/** What a platform answered to a cancellation call. */
export interface CancelAnswer {
  status: number;
}

/**
 * Cancelling on a supplier's store (order-changes.md). Every call that changes something carries an
 * Idempotency-Key, so a repeat after a lost answer changes nothing more. A refusal because the order
 * (or those lines) is already fulfilled is a non-retryable PlatformError (422 or 409): the caller
 * reads the order to decide.
 */
export interface CancellingAdapter {
  /** Reads the order's cancellation-relevant state. */
  readSupplierOrder(store: StoreConnection, orderId: string): Promise<SupplierOrderState>;
  /** The calls `readSupplierOrder` makes (platform_b reads an order's shipment trackings beside it), for the turns an attempt books. */
  readonly readCalls: number;
  /** The order's lines (and ids), in one call: what a placement needs to know of the order it holds; what shipped is not read. */
  readSupplierLines(store: StoreConnection, orderId: string): Promise<SupplierOrderState>;
  /** Cancels the whole order. */
  cancelSupplierOrder(store: StoreConnection, orderId: string, idempotencyKey: string): Promise<CancelAnswer>;
  /**
   * Whether the whole-order cancel sets the order's status whatever it was (platform_b's PUT turns a
   * refunded order cancelled), so the order must be read before it; the others' cancel changes
   * nothing on a cancelled order and refuses a shipped one.
   */
  readonly cancelOverwritesStatus: boolean;
  /**
   * The quantities a refused cancel says are fulfilled already, per supplier SKU (custom's 409
   * `already_fulfilled` names them; its order shows no fulfilled quantities of its own), or null when
   * the refusal says none. Absent where a refusal never names them.
   */
  fulfilledIn?(refusal: PlatformError): { sku: string; quantity: number }[] | null;
  /** Cancels these quantities of these lines; null when the platform cannot cancel some lines only. */
  readonly cancelSupplierLines: ((store: StoreConnection, orderId: string, lines: LineToCancel[], idempotencyKey: string) => Promise<CancelAnswer>) | null;
  /**
   * The order carrying the service's `reference` among the store's orders created since `since`
   * (paged), or null: how an order whose creation answer was lost is found again, never by creating it.
   * The lookup reads a bounded number of pages; when it stops there while the list goes on, `whenCut`
   * says what that is: `fail` (a PlatformError: the order may be further on, so a caller that acts on
   * "not found" as proof, a cancellation ending `not_placed`, must not get null) or `not_found` (null,
   * for a caller that only guards against a rare duplicate and would otherwise never get its work done).
   */
  findOrderByReference(store: StoreConnection, reference: string, since: Date, whenCut: LookupCut): Promise<string | null>;
}

export interface PlatformAdapter extends CancellingAdapter {
  readonly platform: Platform;
  /** Whether adding a fulfillment needs at least one tracking number (its API refuses one without). */
  readonly needsTrackingNumber: boolean;
  /** Reads an order from the store and normalises it. */
  getOrder(store: StoreConnection, orderId: string): Promise<ResellerOrder>;
  /** Places an order; a repeat with the same idempotency key returns the first order. */
  createOrder(store: StoreConnection, order: SupplierOrder, idempotencyKey: string): Promise<Created>;
  /** How many calls `createFulfillment` makes for this tracking (so a worker can wait for every one's turn). */
  fulfillmentCalls(tracking: Tracking): number;
  /** Adds a fulfillment with tracking to an order and notifies the customer. */
  createFulfillment(
    store: StoreConnection,
    orderId: string,
    tracking: Tracking,
    idempotencyKey: string,
  ): Promise<Created>;
  /**
   * The store's orders created since `since` (the platform's filter; it may return a few older ones),
   * oldest first, one page per iteration, following the platform's own paging. Stop iterating to
   * stop listing: the next page is only requested when asked for.
   */
  listOrders(store: StoreConnection, since: Date): AsyncIterable<ListedOrder[]>;
  /**
   * One page of the store's orders updated since `since` (the divergence watch, src/platforms/updated.ts),
   * in the order of their update; `cursor` is the previous page's `next` (null: the first page).
   */
  listUpdatedOrders(store: StoreConnection, since: Date, cursor: string | null): Promise<UpdatedPage>;
  /** One order read by id as its updated-list entry reads it (its reference among the rest: src/platforms/updated.ts). */
  readListedOrder(store: StoreConnection, orderId: string): Promise<UpdatedOrder>;
  /**
   * The fulfillments an order already shows (src/platforms/order-fulfillments.ts), as the platform
   * identifies them: one call. What a push of tracking after a lost answer checks first.
   */
  listOrderFulfillments(store: StoreConnection, orderId: string): Promise<OrderFulfillment[]>;
  /** The shipments of an order whose updated-list entry left them to be read apart (platform_b's, but those that cannot have shipped). */
  listShipments(store: StoreConnection, orderId: string): Promise<SourceFulfillment[]>;
  /** Reads an orders/create webhook body; throws PayloadError when it is not a valid order. */
  parseOrderWebhook(body: unknown): ResellerOrder;
  /**
   * Reads a fulfillments/create webhook body; throws PayloadError when it is not valid. Null when the
   * body is a valid fulfillment that ships nothing (platform_a `status` `cancelled`, `error` or `failure`).
   */
  parseFulfillmentWebhook(body: unknown): SourceFulfillment | null;
}

/** A platform call that did not succeed. `retryable` separates 429/5xx/network from 4xx. */
export class PlatformError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
    /** False when the request was never sent (the store's turn was too far away): nothing happened on the platform. */
    readonly sent: boolean = true,
    /**
     * A 409's JSON body, for an adapter that reads what it says (`fulfilledIn`); undefined otherwise.
     * Not redacted, so not enumerable: a logged error (pino's `err`) never carries it.
     */
    answer: unknown = undefined,
  ) {
    super(message);
    this.name = 'PlatformError';
    Object.defineProperty(this, 'answer', { value: answer, enumerable: false, writable: false });
  }

  /** See the constructor's `answer`. */
  declare readonly answer: unknown;
}

/**
 * A 2xx answer longer than the request's bound (src/platforms/http.ts), not read further. The same
 * request would get the same answer, so it is not retryable as such; a list page is read again with
 * fewer entries instead (src/platforms/listing.ts `readShrinking`).
 */
export class AnswerTooLarge extends PlatformError {
  constructor(
    message: string,
    status: number,
    /** The bound the answer went over, in bytes. */
    readonly maxBytes: number,
  ) {
    super(message, false, status);
  }
}

/** A webhook body that verified but is not a valid payload for the platform. */
export class PayloadError extends Error {
  constructor(
    message: string,
    readonly path: string | null = null,
  ) {
    super(message);
    this.name = 'PayloadError';
  }
}

/** The divergence watch's updated-since lists (src/platforms/updated.ts). */
/** One order of an updated-since list. */
export interface UpdatedOrder {
  externalOrderId: string;
  /** The reference the service attached when it placed the order (its sync job id), if any. */
  syncReference: string | null;
  updatedAt: Date;
  /** platform_a `cancelled_at`, platform_b `cancelled` or `refunded`, custom `cancelled`. */
  cancelled: boolean;
  cancelReason: string | null;
  /** The platform's own status word (platform_a: `cancelled`, its fulfillment_status, or `open`). */
  status: string;
  /** The shipments the order shows; null when they are read apart (`listShipments`: platform_b's, in any status but pending, failed, cancelled, refunded). */
  shipments: SourceFulfillment[] | null;
  /**
   * What the order shows cancelled of its lines while it is not cancelled whole, as of `updatedAt`
   * (custom `cancelledQuantity`; platform_a `quantity` less `fulfillable_quantity` and less what its
   * shipped fulfillments name of the line): what the divergence watch compares with the storefront
   * cancellations the service recorded for a routed order. Absent or null when the entry shows none
   * or cannot tell (platform_b has no partial cancellation; a platform_a fulfillment that names no
   * lines; lines the list entry does not give readably).
   */
  cancelledLines?: CancelledBefore | null;
}

/** One page, and where the next one starts (null: the last page). */
export interface UpdatedPage {
  orders: UpdatedOrder[];
  next: string | null;
}

/** Every platform's adapter, built once at start-up (src/server.ts). */
export type PlatformAdapters = Record<Platform, PlatformAdapter>;
