import { data as iso4217 } from 'currency-codes';
import { describe, expect, it } from 'vitest';
import { currencyExponent, fromMinorUnits, MAX_AMOUNT_MINOR, toMinorUnits } from '../src/money.ts';

describe('currency minor units (ISO 4217)', () => {
  it('covers every currency of the ISO 4217 list with its exponent', () => {
    expect(iso4217.length).toBeGreaterThan(150);
    const wrong = iso4217.filter(({ code, digits }) => currencyExponent(code) !== digits).map(({ code, digits }) => `${code}: ${currencyExponent(code)} ≠ ${digits}`);
    expect(wrong).toEqual([]);
  });

  // Intl's locale data shows these with other decimals than ISO 4217 defines.
  it.each([
    ['PKR', 2],
    ['HUF', 2],
    ['COP', 2],
    ['IDR', 2],
    ['LBP', 2],
    ['IRR', 2],
    ['IQD', 3],
    ['KWD', 3],
    ['JPY', 0],
    ['CLP', 0],
    ['CLF', 4],
    ['EUR', 2],
  ])('%s has %i decimals', (code, digits) => {
    expect(currencyExponent(code)).toBe(digits);
    expect(currencyExponent(code.toLowerCase())).toBe(digits);
  });

  it.each(['ABC', 'US', 'EURO', ''])('refuses %j, which is no ISO 4217 code', (code) => {
    expect(() => currencyExponent(code)).toThrow(RangeError);
  });
});

describe('toMinorUnits / fromMinorUnits', () => {
  it.each([
    ['499.99', 'PKR', 49_999],
    ['1990.50', 'HUF', 199_050],
    ['10000.50', 'COP', 1_000_050],
    ['12.345', 'IQD', 12_345],
    ['12.5', 'KWD', 12_500],
    ['1250', 'JPY', 1250],
    ['0.0001', 'CLF', 1],
    ['12.50', 'EUR', 1250],
    ['0', 'EUR', 0],
  ])('reads %s %s as %i minor units and writes it back', (amount, currency, minor) => {
    expect(toMinorUnits(amount, currency)).toBe(minor);
    expect(toMinorUnits(fromMinorUnits(minor, currency), currency)).toBe(minor);
  });

  it.each([
    ['12.3456', 'IQD'],
    ['1.5', 'JPY'],
    ['1.001', 'EUR'],
  ])('refuses %s %s: more decimals than the currency has', (amount, currency) => {
    expect(() => toMinorUnits(amount, currency)).toThrow(/more decimals/);
  });

  it('accepts amounts up to MAX_AMOUNT_MINOR and refuses larger ones', () => {
    expect(MAX_AMOUNT_MINOR).toBe(1_000_000_000_000);
    expect(toMinorUnits('10000000000.00', 'EUR')).toBe(MAX_AMOUNT_MINOR);
    expect(() => toMinorUnits('10000000000.01', 'EUR')).toThrow(/too large/);
    expect(() => toMinorUnits('9'.repeat(400), 'EUR')).toThrow(/too large/);
    expect(() => toMinorUnits(1e300, 'EUR')).toThrow(/too large/);
    expect(() => toMinorUnits(2 ** 53 + 2, 'JPY')).toThrow(/too large/);
  });

  it.each(['1e3', '8e+3.02', 'Infinity', 'NaN', '1,000.00', ' ', '.5', '5.'])('refuses the malformed amount %j', (amount) => {
    expect(() => toMinorUnits(amount, 'EUR')).toThrow(RangeError);
  });

  it('never writes an unsafe integer in exponent notation', () => {
    expect(() => fromMinorUnits(1e21, 'EUR')).toThrow(RangeError);
    expect(() => fromMinorUnits(1.5, 'EUR')).toThrow(RangeError);
    expect(fromMinorUnits(-1250, 'EUR')).toBe('-12.50');
    expect(fromMinorUnits(5, 'IQD')).toBe('0.005');
  });
});
