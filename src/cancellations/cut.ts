import type { ResellerOrder } from '../orders/types.ts';
import type { CancelledLine } from './entity.ts';

/** The order without these quantities of these lines (by SKU); a line cut to nothing is left out. */
export function cutOrder(order: ResellerOrder, cancelled: CancelledLine[]): ResellerOrder {
  const remaining = new Map(cancelled.map((line) => [line.sku, line.quantity]));
  const lines = order.lines.flatMap((line) => {
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

/** The `reason` of a cancellation whose lines were cut from its job's stored order before any placement. */
export const CUT_BEFORE_PLACEMENT = 'cut before placement: the supplier order is placed without these lines';
