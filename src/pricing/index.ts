import type { PricingConfig, PricingRule } from '../../contract/pricing.ts';
import { fromMinorUnits } from '../money.ts';
import type { OrderLine, ResellerOrder, SupplierOrder, SupplierOrderLine } from '../orders/types.ts';
import { decimalFraction, divideRoundingHalfAwayFromZero } from './exact-decimal.ts';
import { vendorMatches } from './vendor.ts';

export { normaliseVendor, vendorMatches } from './vendor.ts';

/** The order cannot be priced for the supplier: retrying will not help until the config or order changes. */
export class PricingError extends Error {
  override name = 'PricingError';
}

type PriceRule = Extract<PricingRule, { field: 'price' }>;
type TextRule = Exclude<PricingRule, PriceRule>;

/** The part of `order` that the supplier with `vendorTag` fulfils, at the supplier's prices. */
export function buildSupplierOrder(
  order: ResellerOrder,
  supplier: { vendorTag: string; pricingConfig: PricingConfig },
  reference: string,
): SupplierOrder {
  const lines = order.lines.filter((line) => vendorMatches(line.vendor, supplier.vendorTag));
  if (lines.length === 0) {
    throw new PricingError(`order ${order.externalOrderId} has no line from vendor "${supplier.vendorTag}"`);
  }
  return {
    reference,
    resellerOrderId: order.externalOrderId,
    currency: order.currency,
    email: order.email,
    shippingAddress: order.shippingAddress,
    lines: lines.map((line) => priceLine(line, supplier.pricingConfig, order.currency)),
  };
}

/** One reseller line as the supplier is asked for it; `currency` only makes errors readable. */
export function priceLine(line: OrderLine, config: PricingConfig, currency: string): SupplierOrderLine {
  const { sku, title, quantity, unitPriceMinor } = line;
  const resellerLine: SupplierOrderLine = { sku, title, quantity, unitPriceMinor };
  const supplierLine =
    config.type === 'percentage'
      ? { ...resellerLine, unitPriceMinor: withoutMarkup(unitPriceMinor, config.value) }
      : config.rules.reduce(applyRule, resellerLine);

  assertSendablePrice(supplierLine.unitPriceMinor, sku, currency);
  return supplierLine;
}

function assertSendablePrice(unitPriceMinor: number, sku: string, currency: string): void {
  if (unitPriceMinor < 0) {
    const shown = `${fromMinorUnits(unitPriceMinor, currency)} ${currency}`;
    throw new PricingError(`pricing makes the unit price of ${sku} negative (${shown})`);
  }
  if (!Number.isSafeInteger(unitPriceMinor)) {
    throw new PricingError(`pricing makes the unit price of ${sku} too large to be exact`);
  }
}

/** Reseller price = supplier price × (1 + percent / 100), so supplier price = reseller × 100 / (100 + percent). */
function withoutMarkup(resellerUnitMinor: number, percent: number): number {
  const markup = decimalFraction(percent);
  const numerator = BigInt(resellerUnitMinor) * 100n * markup.denominator;
  const denominator = 100n * markup.denominator + markup.numerator;
  return Number(divideRoundingHalfAwayFromZero(numerator, denominator));
}

function applyRule(line: SupplierOrderLine, rule: PricingRule): SupplierOrderLine {
  return rule.field === 'price'
    ? { ...line, unitPriceMinor: applyPriceRule(line.unitPriceMinor, rule) }
    : { ...line, [rule.field]: applyTextRule(line[rule.field], rule) };
}

function applyPriceRule(unitPriceMinor: number, rule: PriceRule): number {
  switch (rule.op) {
    case 'multiply': {
      const factor = decimalFraction(rule.value);
      return Number(divideRoundingHalfAwayFromZero(BigInt(unitPriceMinor) * factor.numerator, factor.denominator));
    }
    case 'add':
      return unitPriceMinor + rule.value;
    case 'set':
      return rule.value;
  }
}

function applyTextRule(text: string, rule: TextRule): string {
  switch (rule.op) {
    case 'set':
      return rule.value;
    case 'prefix':
      return rule.value + text;
    case 'suffix':
      return text + rule.value;
  }
}
