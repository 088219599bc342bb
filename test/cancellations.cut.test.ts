import { describe, expect, it } from 'vitest';
import { cutOrder } from '../src/cancellations/cut.ts';
import type { ResellerOrder } from '../src/orders/types.ts';

const order: ResellerOrder = {
  externalOrderId: '1001',
  currency: 'USD',
  email: null,
  shippingAddress: null,
  lines: [
    { sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, unitPriceMinor: 2500 },
    { sku: 'B-1', title: 'Bell', vendor: 'Acme', quantity: 3, unitPriceMinor: 500, totalMinor: 1000 },
  ],
};

describe('cutting lines from an order not placed yet', () => {
  it('removes exactly those quantities, drops a line cut to nothing, and scales an exact total', () => {
    expect(cutOrder(order, [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 1 }], 'Acme').lines).toEqual([
      { sku: 'B-1', title: 'Bell', vendor: 'Acme', quantity: 2, unitPriceMinor: 500, totalMinor: 667, position: 1 },
    ]);
  });

  it('never cuts more than the line holds, and leaves other lines as they are', () => {
    expect(cutOrder(order, [{ sku: 'A-1', quantity: 5 }, { sku: 'Z-9', quantity: 1 }], 'Acme').lines).toEqual([{ ...order.lines[1], position: 1 }]);
    expect(order.lines).toHaveLength(2);
  });

  it("cuts only the job's own supplier's lines: another vendor's line with the same SKU (the job stores the whole order) is left as it is", () => {
    const shared: ResellerOrder = {
      ...order,
      lines: [
        { sku: 'W-1', title: 'Widget', vendor: 'Bolt', quantity: 2, unitPriceMinor: 100 },
        { sku: 'W-1', title: 'Widget', vendor: 'acme ', quantity: 3, unitPriceMinor: 100 },
      ],
    };
    expect(cutOrder(shared, [{ sku: 'W-1', quantity: 1 }], 'Acme').lines).toEqual([
      { ...shared.lines[0], position: 0 },
      { ...shared.lines[1], quantity: 2, position: 1 },
    ]);
  });

  it("keeps each line's place in the storefront order: a position set before (a line left out earlier) is kept, others are their index", () => {
    const cut = cutOrder(order, [{ sku: 'A-1', quantity: 2 }], 'Acme');
    expect(cut.lines.map((line) => line.position)).toEqual([1]);
    const again = cutOrder({ ...cut, lines: [...cut.lines, { sku: 'C-1', title: 'Chain', vendor: 'Acme', quantity: 1, unitPriceMinor: 100, position: 4 }] }, [{ sku: 'B-1', quantity: 3 }], 'Acme');
    expect(again.lines.map((line) => [line.sku, line.position])).toEqual([['C-1', 4]]);
  });

  it("with its supplier gone (no tag), cuts by SKU among the lines naming a vendor: a line naming none is no supplier's", () => {
    const withCustomItem: ResellerOrder = {
      ...order,
      lines: [
        { sku: 'A-1', title: 'Gift wrap', vendor: ' ', quantity: 1, unitPriceMinor: 100 },
        { sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, unitPriceMinor: 2500 },
      ],
    };
    expect(cutOrder(withCustomItem, [{ sku: 'A-1', quantity: 1 }], null).lines).toEqual([
      { ...withCustomItem.lines[0], position: 0 },
      { ...withCustomItem.lines[1], quantity: 1, position: 1 },
    ]);
  });
});
