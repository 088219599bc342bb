/**
 * Limits on amounts and quantities, part of the API (documented in the contract and the README).
 * Together they keep every amount the service reads, computes or sends an exact integer of minor
 * units, far below 2^53.
 */

/**
 * The largest amount, in minor units of the order's currency, of a unit price or a line total:
 * received in an order, set or added by a pricing rule, or sent to a supplier
 * (10,000,000,000.00 in a two-decimal currency).
 */
export const MAX_AMOUNT_MINOR = 1_000_000_000_000;

/** The most items of one order line. */
export const MAX_QUANTITY = 1_000_000;

/**
 * The most tracking numbers one fulfillment webhook may carry; more is refused as a whole (400
 * `validation_failed`, param `tracking_numbers`). A platform that takes one number per call
 * (platform_b) spends one of the reseller store's turns on each.
 */
export const MAX_TRACKING_NUMBERS_PER_FULFILLMENT = 100;

/**
 * The storefront order ids the service keeps (a sync job's `externalOrderId`): 1 to 32 ASCII
 * letters, digits, `_` and `-`. An order webhook, a reconciled order or a cancellation with another
 * id is refused, and so is `POST /v1/sync_jobs`. platform_a and platform_b ids are numbers (digits only).
 */
export const EXTERNAL_ORDER_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** The most digits of a platform_a or platform_b order id given to `POST /v1/sync_jobs` (leading zeros included). */
export const MAX_NUMERIC_ORDER_ID_DIGITS = 20;
