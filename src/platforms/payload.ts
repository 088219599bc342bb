/** Building blocks for reading platform payloads into the service's own types. */
import { z } from 'zod';
import { currencyExponent, fromMinorUnits, MAX_AMOUNT_MINOR, toMinorUnits } from '../money.ts';
import { MAX_QUANTITY, type Platform, type PostalAddress } from '../orders/types.ts';
import { divideRoundingHalfAwayFromZero } from '../pricing/exact-decimal.ts';
import { isStorableId } from '../shared/text.ts';
import { PayloadError } from './types.ts';

const DEFAULT_CURRENCY = 'USD';
const REPORTED_ISSUES = 3;

/** Optional free text; blank or missing becomes null. */
export const optionalText = z
  .string()
  .nullish()
  .transform((value) => value?.trim() || null);

/** ISO 4217 code, upper-cased; platforms that omit it mean USD. */
export const orderCurrency = z
  .string()
  .trim()
  .toUpperCase()
  .regex(/^[A-Z]{3}$/, 'expected an ISO 4217 currency code')
  .refine(isKnownCurrency, 'not an ISO 4217 currency code')
  .nullish()
  .transform((value) => value ?? DEFAULT_CURRENCY);

/**
 * The longest id the service keeps (`sync_jobs.source_order_id`, `fulfillments.reseller_fulfillment_id`
 * are varchar(255)). An id it cannot keep, too long or with a control character, is refused when
 * the answer is read: the attempt fails with a clear error instead of its outcome failing to be written.
 */
export const PLATFORM_ID_MAX_LENGTH = 255;

/**
 * An integer id sent as a JSON number or a digit string, carried as a string. A JSON number beyond
 * 2^53 has already lost digits when parsed, so it is refused rather than read as another id.
 */
export const numericId = z
  .union([z.number().int().positive().safe(), z.string().regex(/^\d+$/, 'expected a numeric id')])
  .transform(String)
  .pipe(z.string().max(PLATFORM_ID_MAX_LENGTH, `expected an id of at most ${PLATFORM_ID_MAX_LENGTH} characters`));

/**
 * The id of a storefront order as the service keys its jobs by: platform_a and platform_b number
 * their orders, so `01001` is order 1001 and is carried as `1001` (0 is no order: null). A custom
 * storefront's ids are strings, kept as given.
 */
export function canonicalOrderId(platform: Platform, id: string): string | null {
  if (platform === 'custom' || !/^\d+$/.test(id)) return id;
  const canonical = id.replace(/^0+/, '');
  return canonical === '' ? null : canonical;
}

/** Any id a platform assigns, number or string, carried as a string. */
export const anyId = z
  .union([z.number().int().nonnegative().safe(), z.string()])
  .transform(String)
  .pipe(
    z
      .string()
      .min(1, 'expected an id')
      .refine(
        (id) => isStorableId(id, PLATFORM_ID_MAX_LENGTH),
        `expected an id the service can keep: at most ${PLATFORM_ID_MAX_LENGTH} characters, no control characters`,
      ),
  );

/** A whole number of items, 1 to MAX_QUANTITY (1e21 and 2^53 + 2 are integers to JSON, not quantities). */
export const quantity = z.number().int().positive().max(MAX_QUANTITY);

/**
 * A line's sku or vendor. Storefronts allow custom line items without either; such a line is kept
 * with '' (a blank vendor matches no supplier, so it is reported as unmatched) rather than the
 * whole order being refused.
 */
export const lineText = z
  .string()
  .nullish()
  .transform((value) => value ?? '');

export const stringList = z
  .array(z.string())
  .nullish()
  .transform((values) => values ?? []);

/** Validates `body` against `schema`; throws PayloadError naming the first offending path. */
export function parsePayload<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, body: unknown, what: string): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, REPORTED_ISSUES);
  const details = issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; ');
  throw new PayloadError(`invalid ${what}: ${details}`, issues[0]?.path.join('.') || null);
}

/** A price in minor units; `path` names the field for the PayloadError when it is unusable. */
export function priceMinor(amount: string | number, currencyCode: string, what: string, path: string): number {
  let minor: number;
  try {
    minor = toMinorUnits(amount, currencyCode);
  } catch (error) {
    throw new PayloadError(`invalid ${what}: ${path}: ${(error as Error).message}`, path);
  }
  if (minor < 0) throw new PayloadError(`invalid ${what}: ${path}: must not be negative`, path);
  return minor;
}

/**
 * Refuses a line whose total (unit price × quantity) is above MAX_AMOUNT_MINOR, naming its quantity:
 * every amount computed from the line then stays an exact integer.
 */
export function assertLineTotal(unitPriceMinor: number, lineQuantity: number, currencyCode: string, what: string, path: string): void {
  if (unitPriceMinor * lineQuantity > MAX_AMOUNT_MINOR) {
    const limit = fromMinorUnits(MAX_AMOUNT_MINOR, currencyCode);
    throw new PayloadError(`invalid ${what}: ${path}: the line total (price × quantity) is above ${limit} ${currencyCode}`, path);
  }
}

/** total ÷ quantity in whole minor units, halves away from zero (the unit price of a line priced by its total). */
export function unitPriceOfTotal(totalMinor: number, lineQuantity: number): number {
  return Number(divideRoundingHalfAwayFromZero(BigInt(totalMinor), BigInt(lineQuantity)));
}

/** Rounds a floating-point amount (as some platforms compute prices) to the currency's minor unit. */
export function roundedPriceMinor(amount: number, currencyCode: string, what: string, path: string): number {
  return priceMinor(amount.toFixed(currencyExponent(currencyCode)), currencyCode, what, path);
}

function isKnownCurrency(code: string): boolean {
  try {
    currencyExponent(code);
    return true;
  } catch {
    return false;
  }
}

/** The address, or null when the platform sent only blanks (orders that ship nothing). */
export function postalAddress(address: PostalAddress): PostalAddress | null {
  return Object.values(address).some((value) => value !== null) ? address : null;
}

/** Trimmed, non-blank, first occurrence only. */
export function distinct(values: ReadonlyArray<string | null | undefined>): string[] {
  const present = values.map((value) => value?.trim()).filter((value): value is string => !!value);
  return [...new Set(present)];
}

/** A scheme other than http(s) (`javascript:`, `data:`, `mailto:`): such a link is no tracking page. */
const FOREIGN_SCHEME = /^(?!https?:)[a-z][a-z0-9+.-]*:/i;
/**
 * A C0 control character or DEL. A browser's URL parser strips leading controls and removes every
 * tab, line feed and carriage return before it reads the scheme, so `java\tscript:` or
 * `\u0001javascript:` is a `javascript:` link to it; no tracking page needs one.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * A supplier's tracking links, as `distinct` keeps them, without those of another scheme than http(s):
 * they are pushed to the storefront (and the customer's notification) and shown in the console, so
 * a `javascript:` link is dropped at intake, and so is any link with a control character (which a
 * browser would read past to a scheme the check did not see). A link without a scheme
 * (`track.example/1Z…`) is kept.
 */
export function trackingLinks(values: ReadonlyArray<string | null | undefined>): string[] {
  return distinct(values).filter((url) => !CONTROL.test(url) && !FOREIGN_SCHEME.test(url));
}

/**
 * platform_a Fulfillment `status` values that ship nothing (platforms.md gives the field; the platform's
 * values are `pending`, `open`, `success`, `cancelled`, `error`, `failure`): a fulfillment cancelled
 * after it was made, or one that ended in error or failure, is no parcel on its way. Its tracking is
 * not the customer's, and the order is not shipped by it.
 */
const PLATFORM_A_VOID_FULFILLMENT = new Set(['cancelled', 'error', 'failure']);

/** Whether a platform_a fulfillment with this `status` stands for goods shipped (a fulfillment without one does, as before the field was read). */
export function platformAFulfillmentShipped(status: string | null | undefined): boolean {
  return typeof status !== 'string' || !PLATFORM_A_VOID_FULFILLMENT.has(status.trim().toLowerCase());
}
