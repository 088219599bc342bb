/**
 * Money stays exact: factors and percentages from pricing configs are turned into fractions of
 * BigInts, so rounding depends only on the decimal the merchant wrote, never on float drift.
 */

export interface Fraction {
  numerator: bigint;
  denominator: bigint;
}

const NUMBER_TEXT = /^(-?\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

/**
 * The decimal a config number was written as: 33.333 -> 33333/1000, not the binary double nearest
 * to it. `String(number)` gives the shortest decimal that reads back as the same double, which is
 * the one that was written in the JSON.
 */
export function decimalFraction(value: number): Fraction {
  const match = NUMBER_TEXT.exec(String(value));
  if (!match) throw new RangeError(`not a finite number: ${value}`);
  const [, whole = '', fraction = '', exponent = '0'] = match;
  const digits = BigInt(whole + fraction);
  const scale = fraction.length - Number(exponent);
  return scale >= 0
    ? { numerator: digits, denominator: 10n ** BigInt(scale) }
    : { numerator: digits * 10n ** BigInt(-scale), denominator: 1n };
}

/** numerator / denominator rounded to an integer, halves away from zero (2.5 -> 3, -2.5 -> -3). */
export function divideRoundingHalfAwayFromZero(numerator: bigint, denominator: bigint): bigint {
  const negative = numerator < 0n !== denominator < 0n;
  const dividend = abs(numerator);
  const divisor = abs(denominator);
  const magnitude = (2n * dividend + divisor) / (2n * divisor);
  return negative ? -magnitude : magnitude;
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}
