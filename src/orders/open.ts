import { linePosition, type ResellerOrder } from './types.ts';

/**
 * The order as it is still open: its lines less the quantities the storefront shows cancelled
 * (`cancelledBefore`), a line cancelled whole left out, a line priced by its total keeping its share,
 * each line kept with its index in the storefront order (`position`).
 * What a manual job places, reading the storefront order at each attempt (src/sync-jobs/attempt.ts).
 */
export function openOrder(order: ResellerOrder): ResellerOrder {
  const { cancelledBefore, ...rest } = order;
  if (!cancelledBefore || cancelledBefore.lines.length === 0) return rest;
  const remaining = new Map(cancelledBefore.lines.map((line) => [JSON.stringify([line.sku, line.vendor]), line.quantity]));
  // Each line kept with its place in the storefront order (`position`): the lines before it may be left out.
  const lines = order.lines.flatMap((sold, index) => {
    const line = { ...sold, position: linePosition(sold, index) };
    const key = JSON.stringify([line.sku, line.vendor]);
    const cut = Math.min(line.quantity, remaining.get(key) ?? 0);
    if (cut === 0) return [line];
    remaining.set(key, (remaining.get(key) ?? 0) - cut);
    const quantity = line.quantity - cut;
    if (quantity <= 0) return [];
    const totalMinor = line.totalMinor === undefined ? undefined : Math.round((line.totalMinor * quantity) / line.quantity);
    return [{ ...line, quantity, ...(totalMinor !== undefined && { totalMinor }) }];
  });
  return { ...rest, lines };
}
