import { linePosition, type ResellerOrder } from '../orders/types.ts';
import { normaliseVendor, vendorMatches } from '../pricing/index.ts';
import type { CancelledLine } from './entity.ts';

/**
 * The order without these quantities of these lines (by SKU) of the job's supplier (`vendorTag`);
 * a line cut to nothing is left out. A job stores the whole storefront order, so another supplier's
 * line with the same SKU is left as it is. (No tag: the supplier is gone; by SKU alone, among the
 * lines that name a vendor.)
 */
export function cutOrder(order: ResellerOrder, cancelled: CancelledLine[], vendorTag: string | null): ResellerOrder {
  const remaining = new Map(cancelled.map((line) => [line.sku, line.quantity]));
  // Each line kept with its place in the storefront order (`position`): a line before it may be left out.
  const lines = order.lines.flatMap((stored, index) => {
    const line = { ...stored, position: linePosition(stored, index) };
    if (!isSuppliersLine(line.vendor, vendorTag)) return [line];
    const cut = Math.min(line.quantity, remaining.get(line.sku) ?? 0);
    if (cut === 0) return [line];
    remaining.set(line.sku, (remaining.get(line.sku) ?? 0) - cut);
    const quantity = line.quantity - cut;
    if (quantity <= 0) return [];
    const totalMinor = line.totalMinor === undefined ? undefined : Math.round((line.totalMinor * quantity) / line.quantity);
    return [{ ...line, quantity, ...(totalMinor !== undefined && { totalMinor }) }];
  });
  return { ...order, lines };
}

/** A line naming no vendor (a custom item the storefront sold itself) is no supplier's, even one whose tag is unknown. */
const isSuppliersLine = (vendor: string, vendorTag: string | null) => (vendorTag === null ? normaliseVendor(vendor) !== '' : vendorMatches(vendor, vendorTag));

/** The `reason` of a cancellation whose lines were cut from its job's stored order before any placement. */
export const CUT_BEFORE_PLACEMENT = 'cut before placement: the supplier order is placed without these lines';
