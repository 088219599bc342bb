/**
 * Money is carried as integer minor units everywhere inside the service; platforms speak
 * decimal strings ("12.50"). These helpers are the only place that converts between the two.
 */
import { data as iso4217 } from 'currency-codes';
import { MAX_AMOUNT_MINOR } from '../contract/limits.ts';

export { MAX_AMOUNT_MINOR };

/**
 * Minor-unit digits of every ISO 4217 code, from the ISO list itself (`currency-codes`), not from
 * `Intl`: the locale data shows PKR, HUF, COP, IDR, LBP and IRR without decimals and IQD with 0,
 * while ISO 4217 gives them 2, 2, 2, 2, 2, 2 and 3, and platforms send them that way.
 */
const EXPONENTS = new Map(iso4217.map(({ code, digits }) => [code, digits]));

/** Number of minor-unit digits of an ISO 4217 currency (2 for EUR, 0 for JPY, 3 for KWD). */
export function currencyExponent(currency: string): number {
  const exponent = EXPONENTS.get(currency.toUpperCase());
  if (exponent === undefined) throw new RangeError(`unknown currency ${currency}`);
  return exponent;
}

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/** Parses "12.5", "12.50" or 12.5 into minor units; rejects more precision than the currency has. */
export function toMinorUnits(amount: string | number, currency: string): number {
  const text = typeof amount === 'number' ? numberToPlainString(amount) : amount.trim();
  const match = DECIMAL.exec(text);
  if (!match) throw new RangeError(`invalid amount ${JSON.stringify(amount)}`);
  const [, sign, whole = '', fraction = ''] = match;
  const exponent = currencyExponent(currency);
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > exponent) {
    throw new RangeError(`amount ${text} has more decimals than ${currency} allows`);
  }
  // BigInt, so a long digit string is compared exactly instead of rounded to a nearby double.
  const minor = BigInt(whole) * 10n ** BigInt(exponent) + BigInt(significant.padEnd(exponent, '0') || '0');
  if (minor > BigInt(MAX_AMOUNT_MINOR)) throw new RangeError(`amount ${text} is too large (at most ${fromMinorUnits(MAX_AMOUNT_MINOR, currency)})`);
  return sign ? -Number(minor) : Number(minor);
}

/** Formats minor units as the platform's decimal string: 1250 EUR -> "12.50", 1250 JPY -> "1250". */
export function fromMinorUnits(minor: number, currency: string): string {
  if (!Number.isSafeInteger(minor)) throw new RangeError(`amount ${minor} is not a whole number of minor units`);
  const exponent = currencyExponent(currency);
  const negative = minor < 0;
  const digits = Math.abs(minor).toString().padStart(exponent + 1, '0');
  const whole = digits.slice(0, digits.length - exponent);
  const fraction = exponent > 0 ? `.${digits.slice(digits.length - exponent)}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}

function numberToPlainString(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`invalid amount ${value}`);
  // Avoid exponent notation for tiny/huge values; platforms send prices like 12.5.
  return value.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 });
}
