/**
 * Money is carried as integer minor units everywhere inside the service; platforms speak
 * decimal strings ("12.50"). These helpers are the only place that converts between the two.
 */

const exponentCache = new Map<string, number>();

/** Number of minor-unit digits of an ISO 4217 currency (2 for EUR, 0 for JPY, 3 for KWD). */
export function currencyExponent(currency: string): number {
  const code = currency.toUpperCase();
  let exponent = exponentCache.get(code);
  if (exponent === undefined) {
    try {
      exponent = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions()
        .maximumFractionDigits ?? 2;
    } catch {
      throw new RangeError(`unknown currency ${currency}`);
    }
    exponentCache.set(code, exponent);
  }
  return exponent;
}

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/** Parses "12.5", "12.50" or 12.5 into minor units; rejects more precision than the currency has. */
export function toMinorUnits(amount: string | number, currency: string): number {
  const text = typeof amount === 'number' ? numberToPlainString(amount) : amount.trim();
  const match = DECIMAL.exec(text);
  if (!match) throw new RangeError(`invalid amount ${JSON.stringify(amount)}`);
  const [, sign, whole, fraction = ''] = match;
  const exponent = currencyExponent(currency);
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > exponent) {
    throw new RangeError(`amount ${text} has more decimals than ${currency} allows`);
  }
  const minor = Number(whole) * 10 ** exponent + Number(fraction.padEnd(exponent, '0').slice(0, exponent) || '0');
  if (!Number.isSafeInteger(minor)) throw new RangeError(`amount ${text} is too large`);
  return sign ? -minor : minor;
}

/** Formats minor units as the platform's decimal string: 1250 EUR -> "12.50", 1250 JPY -> "1250". */
export function fromMinorUnits(minor: number, currency: string): string {
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
