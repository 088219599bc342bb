/** Building blocks for reading the platforms' order lists (reconciliation). */
import { z } from 'zod';
import type { CancelledBefore, ResellerOrder } from '../orders/types.ts';
import type { ResponseHeaders } from './http.ts';
import { parsePayload } from './payload.ts';
import { AnswerTooLarge, PayloadError, type ListedOrder } from './types.ts';

const ZONE = /(?:[zZ]|[+-]\d{2}:?\d{2})$/;

/**
 * An ISO-8601 date-time read into a Date. `assumeUtc` reads one without a zone designator as UTC
 * (platform_b's `*_gmt` fields); otherwise the zone is required, since a bare local time is ambiguous.
 */
export const timestamp = (assumeUtc: boolean) =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/, 'expected an ISO-8601 date-time')
    .transform((value, ctx) => {
      const zoned = ZONE.test(value) ? value : assumeUtc ? `${value}Z` : null;
      const time = zoned === null ? Number.NaN : Date.parse(zoned);
      if (Number.isNaN(time)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'expected an ISO-8601 date-time with a time zone' });
        return z.NEVER;
      }
      return new Date(time);
    });

/** A platform's ISO-8601 time when the value is one (no zone designator: UTC, as `timestamp(true)` reads it); else null. */
export function platformTime(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(value)) return null;
  const time = Date.parse(ZONE.test(value) ? value : `${value}Z`);
  return Number.isNaN(time) ? null : new Date(time);
}

/**
 * What a storefront order shows cancelled of its lines (`cancelled` of each line's quantity, by SKU
 * and vendor), as of the order's own time (`updatedAt`: its last change; when unreadable, now, since
 * whatever the order shows was cancelled before it was read). Nothing when no line has any.
 */
export function cancelledBefore(lines: { sku: string; vendor: string; quantity: number; cancelled: number }[], updatedAt: unknown): Pick<ResellerOrder, 'cancelledBefore'> {
  const sums = new Map<string, CancelledBefore['lines'][number]>();
  for (const line of lines) {
    const quantity = Math.max(0, Math.min(line.cancelled, line.quantity));
    if (quantity === 0) continue;
    const key = JSON.stringify([line.sku, line.vendor]);
    const sum = sums.get(key);
    if (sum) sum.quantity += quantity;
    else sums.set(key, { sku: line.sku, vendor: line.vendor, quantity });
  }
  if (sums.size === 0) return {};
  return { cancelledBefore: { asOf: platformTime(updatedAt) ?? new Date(), lines: [...sums.values()] } };
}

/** What a list entry must carry for reconciliation to place it; the rest is the webhook reader's job. */
export interface ListingFields {
  externalOrderId: string;
  createdAt: Date;
  cancelled: boolean;
}

/**
 * One list entry: its listing fields (a page whose entries lack them is refused as a whole, since
 * the run could not tell where it is), and the order read by the platform's webhook reader, so a
 * listed order is normalised exactly as its webhook would have been.
 */
export function listedOrder(
  entry: unknown,
  fields: z.ZodType<ListingFields, z.ZodTypeDef, unknown>,
  readOrder: (body: unknown) => ResellerOrder,
  what: string,
): ListedOrder {
  const listing = parsePayload(fields, entry, `${what} in the order list`);
  let order: ListedOrder['order'];
  try {
    order = readOrder(entry);
  } catch (error) {
    if (!(error instanceof PayloadError)) throw error;
    order = { invalid: error.message, param: error.path ?? 'body' };
  }
  return { ...listing, order };
}

/** The entries of a list page that must be a JSON array. */
export function pageEntries(body: unknown, what: string): unknown[] {
  return parsePayload(z.array(z.unknown()), body, what);
}

/**
 * platform_b's `X-WP-TotalPages` on a list page: how many pages the list has, or null when the answer
 * has none (a proxy may drop it; a short page is then the last). One that is not a number (sent twice
 * and merged, `2, 2`; empty) is a PayloadError naming the list `what`, since where the list ends is
 * unknown; with `what` null (a lookup by reference, which ends at a short page anyway) it says nothing
 * and is read as a missing one.
 */
export function totalPagesOf(headers: ResponseHeaders, what: string | null): number | null {
  const header = headers('x-wp-totalpages');
  if (header === null) return null;
  if (/^\d+$/.test(header.trim())) return Number(header);
  if (what === null) return null;
  throw new PayloadError(`invalid ${what}: X-WP-TotalPages: expected a number, got ${header.slice(0, 20)}`);
}

/** The target of the `rel="next"` link of a Link header (RFC 8288), or null: the last page. */
export function nextLink(header: string | null): string | null {
  if (header === null) return null;
  for (const [, target, params = ''] of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i.exec(params);
    const relations = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (relations.includes('next') && target) return target;
  }
  return null;
}

/**
 * The fewest entries a list page is asked for when its answers are too large: one order, the most a
 * page can be cut to. Only an order whose own entry is over the list page's bound stops a list.
 */
export const MIN_LIST_PAGE_SIZE = 1;

/**
 * Reads one list page with `size` entries (`read(size)`); when the answer is over the list page's
 * bound (AnswerTooLarge: a supplier whose orders have many long lines fills 8 MiB with 250 of them),
 * reads the same page again with half as many, down to MIN_LIST_PAGE_SIZE. The same answer would
 * come every time, so without this the run or pass failed at that page for ever. Returns the page
 * and the size it was read with: the list goes on with that size, since its neighbours are alike.
 */
export async function readShrinking<T>(size: number, read: (size: number) => Promise<T>): Promise<{ page: T; size: number }> {
  for (let current = size; ; ) {
    try {
      return { page: await read(current), size: current };
    } catch (error) {
      if (!(error instanceof AnswerTooLarge) || current <= MIN_LIST_PAGE_SIZE) throw error;
      current = Math.max(MIN_LIST_PAGE_SIZE, Math.floor(current / 2));
    }
  }
}

/**
 * A list's next-page URL (as the platform gave it) asking for at most `size` entries: unchanged when
 * it asks for no more already (platform_a accepts `limit` beside `page_info`, nothing else).
 */
export function withLimit(url: string, size: number): string {
  if (!URL.canParse(url)) return url;
  const target = new URL(url);
  const limit = Number(target.searchParams.get('limit'));
  if (target.searchParams.has('limit') && Number.isInteger(limit) && limit > 0 && limit <= size) return url;
  target.searchParams.set('limit', String(size));
  return target.toString();
}

/** The `limit` a next-page URL asks for, or `fallback` when it names none (or none readable). */
export function limitOf(url: string, fallback: number): number {
  if (!URL.canParse(url)) return fallback;
  const limit = Number(new URL(url).searchParams.get('limit'));
  return Number.isInteger(limit) && limit > 0 ? Math.min(limit, fallback) : fallback;
}
