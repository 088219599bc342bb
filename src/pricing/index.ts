import type { PricingConfig, PricingRule } from '../../contract/pricing.ts';
import { fromMinorUnits, MAX_AMOUNT_MINOR } from '../money.ts';
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

/**
 * One reseller line as the supplier is asked for it; `currency` only makes errors readable.
 *
 * Prices are computed on BigInt amounts, so no step can lose precision, and the result is refused
 * (PricingError) unless its unit price and line total are whole amounts from 0 to MAX_AMOUNT_MINOR.
 * A line sold by its unit price is priced per unit; a line sold by its exact total (platform_b) is
 * priced as a total: percentage and multiply apply to the total, add and set are per unit and so
 * count once per item, and the unit price is the priced total ÷ quantity, rounded.
 */
export function priceLine(line: OrderLine, config: PricingConfig, currency: string): SupplierOrderLine {
  const { sku, title, quantity } = line;
  const byTotal = line.totalMinor !== undefined;
  const price: Price = { amount: BigInt(line.totalMinor ?? line.unitPriceMinor), units: BigInt(byTotal ? quantity : 1) };
  let supplierLine: { sku: string; title: string; price: Price } = { sku, title, price };
  if (config.type === 'percentage') supplierLine.price = withoutMarkup(price, config.value);
  else supplierLine = config.rules.reduce(applyRule, supplierLine);

  const { amount } = supplierLine.price;
  const totalMinor = byTotal ? amount : amount * BigInt(quantity);
  const unitPriceMinor = byTotal ? divideRoundingHalfAwayFromZero(amount, BigInt(quantity)) : amount;
  assertSendablePrice(unitPriceMinor, totalMinor, sku, currency);
  return {
    sku: supplierLine.sku,
    title: supplierLine.title,
    quantity,
    unitPriceMinor: Number(unitPriceMinor),
    ...(byTotal && { totalMinor: Number(totalMinor) }),
  };
}

/** The SKU a supplier order line got for this reseller SKU: the config's rules on `sku`, in order. */
export function supplierSku(sku: string, config: PricingConfig): string {
  if (config.type === 'percentage') return sku;
  return config.rules.reduce((text, rule) => (rule.field === 'sku' ? applyTextRule(text, rule) : text), sku);
}

/** A price being computed: `amount` minor units for `units` items (1 for a unit price, the quantity for a line total). */
interface Price {
  amount: bigint;
  units: bigint;
}

function assertSendablePrice(unitPriceMinor: bigint, totalMinor: bigint, sku: string, currency: string): void {
  if (unitPriceMinor < 0n) {
    const shown = Number.isSafeInteger(Number(unitPriceMinor)) ? `${fromMinorUnits(Number(unitPriceMinor), currency)} ${currency}` : 'beyond the limit';
    throw new PricingError(`pricing makes the unit price of ${sku} negative (${shown})`);
  }
  // A line priced by its total can go below zero while its unit price still rounds to 0 (-0.02 for 5).
  if (totalMinor < 0n) {
    const shown = Number.isSafeInteger(Number(totalMinor)) ? `${fromMinorUnits(Number(totalMinor), currency)} ${currency}` : 'beyond the limit';
    throw new PricingError(`pricing makes the line total of ${sku} negative (${shown})`);
  }
  if (totalMinor > BigInt(MAX_AMOUNT_MINOR)) {
    throw new PricingError(
      `pricing makes the line total of ${sku} too large (above ${fromMinorUnits(MAX_AMOUNT_MINOR, currency)} ${currency})`,
    );
  }
}

/** Reseller price = supplier price × (1 + percent / 100), so supplier price = reseller × 100 / (100 + percent). */
function withoutMarkup({ amount, units }: Price, percent: number): Price {
  const markup = decimalFraction(percent);
  const numerator = amount * 100n * markup.denominator;
  const denominator = 100n * markup.denominator + markup.numerator;
  return { amount: divideRoundingHalfAwayFromZero(numerator, denominator), units };
}

function applyRule<T extends { sku: string; title: string; price: Price }>(line: T, rule: PricingRule): T {
  return rule.field === 'price'
    ? { ...line, price: applyPriceRule(line.price, rule) }
    : { ...line, [rule.field]: applyTextRule(line[rule.field], rule) };
}

function applyPriceRule({ amount, units }: Price, rule: PriceRule): Price {
  switch (rule.op) {
    case 'multiply': {
      const factor = decimalFraction(rule.value);
      return { amount: divideRoundingHalfAwayFromZero(amount * factor.numerator, factor.denominator), units };
    }
    case 'add':
      return { amount: amount + BigInt(rule.value) * units, units };
    case 'set':
      return { amount: BigInt(rule.value) * units, units };
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
