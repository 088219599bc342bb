import { describe, expect, it } from 'vitest';
import type { PricingConfig, PricingRule } from '../contract/pricing.ts';
import type { OrderLine, ResellerOrder } from '../src/orders/types.ts';
import { MAX_AMOUNT_MINOR } from '../src/money.ts';
import { PricingError, buildSupplierOrder, normaliseVendor, priceLine, vendorMatches } from '../src/pricing/index.ts';

function line(overrides: Partial<OrderLine> = {}): OrderLine {
  return { sku: 'MUG-1', title: 'Blue mug', vendor: 'Acme', quantity: 2, unitPriceMinor: 1000, ...overrides };
}

function percentage(value: number): PricingConfig {
  return { type: 'percentage', value };
}

function rules(...list: PricingRule[]): PricingConfig {
  return { type: 'field_rules', rules: list };
}

function supplierPrice(unitPriceMinor: number, config: PricingConfig, currency = 'EUR'): number {
  return priceLine(line({ unitPriceMinor }), config, currency).unitPriceMinor;
}

describe('vendorMatches', () => {
  it.each([
    ['Acme', 'Acme'],
    ['  Acme ', 'Acme'],
    ['Acme', ' acme\t'],
    ['ACME TOOLS', 'acme tools'],
    // Unicode forms: composed against decomposed, fullwidth against ASCII, and case folding beyond lower case.
    ['Caf\u00e9', 'Cafe\u0301'],
    ['CAFE\u0301', 'caf\u00e9'],
    ['\uff21\uff43\uff4d\uff45', 'Acme'],
    ['Stra\u00dfe', 'STRASSE'],
    ['\u039f\u0394\u039f\u03a3', '\u03bf\u03b4\u03bf\u03c2'],
  ])('matches %j to tag %j', (vendor, tag) => {
    expect(vendorMatches(vendor, tag)).toBe(true);
  });

  it.each([
    ['Acme Tools', 'Acme'],
    ['Acme', 'Acme Tools'],
    ['Acme  Tools', 'Acme Tools'],
    ['Acmé', 'Acme'],
    ['', ''],
    ['  ', ' '],
  ])('does not match %j to tag %j', (vendor, tag) => {
    expect(vendorMatches(vendor, tag)).toBe(false);
  });

  it('normalises by trimming and lower-casing, keeping inner whitespace', () => {
    expect(normaliseVendor('  Acme  Tools\n')).toBe('acme  tools');
  });

  it('normalises Unicode forms (NFKC) and folds case before comparing', () => {
    expect(normaliseVendor('Cafe\u0301')).toBe('caf\u00e9');
    expect(normaliseVendor('\uff21\uff23\uff2d\uff25')).toBe('acme');
  });
});

describe('percentage pricing', () => {
  it.each([
    { reseller: 1250, percent: 25, supplier: 1000 },
    { reseller: 1125, percent: 12.5, supplier: 1000 },
    { reseller: 999, percent: 33.333, supplier: 749 }, // 749.25
    { reseller: 1234, percent: 0, supplier: 1234 },
    { reseller: 500, percent: -50, supplier: 1000 },
    { reseller: 875, percent: -12.5, supplier: 1000 },
    { reseller: 5, percent: 100, supplier: 3 }, // 2.5: halves round away from zero
    { reseller: 14, percent: 12, supplier: 13 }, // exactly 12.5; 14 / 1.12 in floats is 12.4999…
    { reseller: 0, percent: 25, supplier: 0 },
  ])('sends $reseller at $percent% as $supplier', ({ reseller, percent, supplier }) => {
    expect(supplierPrice(reseller, percentage(percent))).toBe(supplier);
  });

  it('works in minor units whatever their size (JPY has none below the yen)', () => {
    expect(supplierPrice(1250, percentage(25), 'JPY')).toBe(1000);
    expect(supplierPrice(1999, percentage(10), 'JPY')).toBe(1817); // 1817.27
  });

  it('keeps sku, title and quantity', () => {
    expect(priceLine(line(), percentage(25), 'EUR')).toEqual({
      sku: 'MUG-1',
      title: 'Blue mug',
      quantity: 2,
      unitPriceMinor: 800,
    });
  });
});

describe('field rules', () => {
  it.each<{ rule: PricingRule; supplier: number }>([
    { rule: { field: 'price', op: 'multiply', value: 0.8 }, supplier: 800 },
    { rule: { field: 'price', op: 'add', value: 250 }, supplier: 1250 },
    { rule: { field: 'price', op: 'add', value: -250 }, supplier: 750 },
    { rule: { field: 'price', op: 'set', value: 799 }, supplier: 799 },
    { rule: { field: 'price', op: 'set', value: 0 }, supplier: 0 },
  ])('applies price $rule.op $rule.value to 1000', ({ rule, supplier }) => {
    expect(supplierPrice(1000, rules(rule))).toBe(supplier);
  });

  it('rounds a multiplied price exactly, halves away from zero', () => {
    // 50 × 0.29 = 14.5 exactly, 14.499999999999998 in floats.
    expect(supplierPrice(50, rules({ field: 'price', op: 'multiply', value: 0.29 }))).toBe(15);
    expect(supplierPrice(999, rules({ field: 'price', op: 'multiply', value: 1.0005 }))).toBe(999); // 999.4995
    // String(0.0000001) is '1e-7'.
    expect(supplierPrice(25_000_000, rules({ field: 'price', op: 'multiply', value: 0.0000001 }))).toBe(3); // 2.5
  });

  it.each<{ rule: PricingRule; sku: string; title: string }>([
    { rule: { field: 'sku', op: 'set', value: 'SUP-77' }, sku: 'SUP-77', title: 'Blue mug' },
    { rule: { field: 'sku', op: 'prefix', value: 'ACME-' }, sku: 'ACME-MUG-1', title: 'Blue mug' },
    { rule: { field: 'sku', op: 'suffix', value: '-EU' }, sku: 'MUG-1-EU', title: 'Blue mug' },
    { rule: { field: 'title', op: 'set', value: 'Mug' }, sku: 'MUG-1', title: 'Mug' },
    { rule: { field: 'title', op: 'prefix', value: 'Gift: ' }, sku: 'MUG-1', title: 'Gift: Blue mug' },
    { rule: { field: 'title', op: 'suffix', value: ' (large)' }, sku: 'MUG-1', title: 'Blue mug (large)' },
  ])('applies $rule.field $rule.op', ({ rule, sku, title }) => {
    expect(priceLine(line(), rules(rule), 'EUR')).toEqual({ sku, title, quantity: 2, unitPriceMinor: 1000 });
  });

  it('applies rules in the order given', () => {
    const double: PricingRule = { field: 'price', op: 'multiply', value: 2 };
    const addOne: PricingRule = { field: 'price', op: 'add', value: 100 };
    const prefix: PricingRule = { field: 'sku', op: 'prefix', value: 'A-' };
    const rename: PricingRule = { field: 'sku', op: 'set', value: 'X' };

    expect(priceLine(line(), rules(double, addOne, prefix, rename), 'EUR')).toMatchObject({
      sku: 'X',
      unitPriceMinor: 2100,
    });
    expect(priceLine(line(), rules(addOne, double, rename, prefix), 'EUR')).toMatchObject({
      sku: 'A-X',
      unitPriceMinor: 2200,
    });
  });

  it('leaves the line as sold without rules', () => {
    expect(priceLine(line(), rules(), 'EUR')).toEqual({
      sku: 'MUG-1',
      title: 'Blue mug',
      quantity: 2,
      unitPriceMinor: 1000,
    });
  });

  it('rejects a negative price', () => {
    const config = rules({ field: 'price', op: 'add', value: -1500 });

    expect(() => priceLine(line(), config, 'EUR')).toThrow(PricingError);
    expect(() => priceLine(line(), config, 'EUR')).toThrow(
      'pricing makes the unit price of MUG-1 negative (-5.00 EUR)',
    );
  });
});

describe('a line priced by its exact total (platform_b)', () => {
  const byTotal = (totalMinor: number, quantity: number) => line({ quantity, unitPriceMinor: Math.round(totalMinor / quantity), totalMinor });

  it('keeps the exact total when the quantity does not divide it, and rounds only the unit price', () => {
    // 10.00 for 3: the unit price is 3.33, but the supplier is asked for 10.00, not 9.99.
    expect(priceLine(byTotal(1000, 3), rules(), 'EUR')).toMatchObject({ quantity: 3, unitPriceMinor: 333, totalMinor: 1000 });
    expect(priceLine(byTotal(1000, 3), percentage(0), 'EUR')).toMatchObject({ unitPriceMinor: 333, totalMinor: 1000 });
  });

  it('prices the total: percentage and multiply on the total, add and set per unit', () => {
    expect(priceLine(byTotal(1000, 3), percentage(25), 'EUR')).toMatchObject({ unitPriceMinor: 267, totalMinor: 800 });
    expect(priceLine(byTotal(1000, 3), rules({ field: 'price', op: 'multiply', value: 0.5 }), 'EUR')).toMatchObject({ unitPriceMinor: 167, totalMinor: 500 });
    expect(priceLine(byTotal(1000, 3), rules({ field: 'price', op: 'add', value: 10 }), 'EUR')).toMatchObject({ unitPriceMinor: 343, totalMinor: 1030 });
    expect(priceLine(byTotal(1000, 3), rules({ field: 'price', op: 'set', value: 250 }), 'EUR')).toMatchObject({ unitPriceMinor: 250, totalMinor: 750 });
  });
});

describe('bounds: every amount is a safe integer of minor units', () => {
  it('accepts a line total of exactly MAX_AMOUNT_MINOR', () => {
    expect(priceLine(line({ quantity: 1_000_000, unitPriceMinor: MAX_AMOUNT_MINOR / 1_000_000 }), percentage(0), 'EUR').unitPriceMinor).toBe(1_000_000);
  });

  it.each<[string, OrderLine, PricingConfig]>([
    ['a set unit price times the quantity', line({ quantity: 1_000_000 }), rules({ field: 'price', op: 'set', value: 2_000_000 })],
    ['multiplications beyond the limit', line({ unitPriceMinor: 10_000_000 }), rules(...Array.from({ length: 3 }, () => ({ field: 'price', op: 'multiply', value: 1000 }) as PricingRule))],
    ['fifty multiplications by 1000', line({ unitPriceMinor: 1 }), rules(...Array.from({ length: 50 }, () => ({ field: 'price', op: 'multiply', value: 1000 }) as PricingRule))],
    ['a markdown of almost 100%', line({ unitPriceMinor: 1_000_000_000 }), percentage(-99.99999)],
    ['adds beyond the limit', line({ unitPriceMinor: 1 }), rules(...Array.from({ length: 20 }, () => ({ field: 'price', op: 'add', value: MAX_AMOUNT_MINOR }) as PricingRule))],
  ])('refuses a result above the limit: %s', (_label, sold, config) => {
    expect(() => priceLine(sold, config, 'EUR')).toThrow(PricingError);
    expect(() => priceLine(sold, config, 'EUR')).toThrow(/too large/);
  });
});

describe('buildSupplierOrder', () => {
  const order: ResellerOrder = {
    externalOrderId: '450789469',
    currency: 'EUR',
    email: 'customer@example.com',
    shippingAddress: {
      name: 'Ada Lovelace',
      address1: '1 Main St',
      address2: null,
      city: 'London',
      province: null,
      zip: 'N1 1AA',
      countryCode: 'GB',
      phone: null,
    },
    lines: [
      line({ sku: 'MUG-1', vendor: ' acme ', unitPriceMinor: 1250 }),
      line({ sku: 'TEE-1', vendor: 'Other Co', unitPriceMinor: 2000 }),
      line({ sku: 'CUP-2', vendor: 'ACME', quantity: 1, unitPriceMinor: 500 }),
    ],
  };
  const acme = { vendorTag: 'Acme', pricingConfig: percentage(25) };

  it("keeps only the supplier's lines, priced for the supplier", () => {
    expect(buildSupplierOrder(order, acme, 'job_01')).toEqual({
      reference: 'job_01',
      resellerOrderId: '450789469',
      currency: 'EUR',
      email: 'customer@example.com',
      shippingAddress: order.shippingAddress,
      lines: [
        { sku: 'MUG-1', title: 'Blue mug', quantity: 2, unitPriceMinor: 1000 },
        { sku: 'CUP-2', title: 'Blue mug', quantity: 1, unitPriceMinor: 400 },
      ],
    });
  });

  it('rejects an order with no line from the supplier', () => {
    const build = () => buildSupplierOrder(order, { ...acme, vendorTag: 'Acme Tools' }, 'job_01');

    expect(build).toThrow(PricingError);
    expect(build).toThrow('order 450789469 has no line from vendor "Acme Tools"');
  });

  it('rejects the order when a rule makes a line negative', () => {
    const markdown = { ...acme, pricingConfig: rules({ field: 'price', op: 'add', value: -600 }) };

    expect(() => buildSupplierOrder(order, markdown, 'job_01')).toThrow(PricingError);
  });
});
