/** Building blocks for reading the platforms' order lists (reconciliation). */
import { z } from 'zod';
import type { ResellerOrder } from '../orders/types.ts';
import { parsePayload } from './payload.ts';
import { PayloadError, type ListedOrder } from './types.ts';

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
