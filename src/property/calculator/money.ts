/**
 * Exact money arithmetic for the calculator. Inputs arrive as JavaScript numbers (EUR, percent,
 * m²); each is read as the decimal it prints as (`String(0.1)` is "0.1", not the binary value
 * 0.1000000000000000055…), every computation is carried out on exact fractions of big integers,
 * and a result is rounded once, at the end, to whole cents, half up (0.5 cent → 1 cent). So no
 * binary floating-point drift enters a result, and `0.1 + 0.2`-style errors cannot appear.
 * Inputs are non-negative (the resources' constraints say so); the rounding assumes it.
 */

/** A non-negative exact fraction num/den (den > 0). */
export interface Fraction {
  readonly num: bigint;
  readonly den: bigint;
}

const TEN = 10n;

/** The exact decimal a finite non-negative number prints as, as a fraction. */
export function exact(value: number): Fraction {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`not a finite non-negative number: ${value}`);
  const [mantissa = '0', exponentText] = String(value).toLowerCase().split('e');
  const [whole = '0', fractionDigits = ''] = mantissa.split('.');
  const exponent = Number(exponentText ?? 0) - fractionDigits.length;
  const digits = BigInt(`${whole}${fractionDigits}`);
  return exponent >= 0
    ? { num: digits * TEN ** BigInt(exponent), den: 1n }
    : { num: digits, den: TEN ** BigInt(-exponent) };
}

export function multiply(a: Fraction, b: Fraction): Fraction {
  return { num: a.num * b.num, den: a.den * b.den };
}

/** a / b; undefined when b is zero (no division by zero, no Infinity). */
export function divide(a: Fraction, b: Fraction): Fraction | undefined {
  return b.num === 0n ? undefined : { num: a.num * b.den, den: a.den * b.num };
}

export function add(a: Fraction, b: Fraction): Fraction {
  return { num: a.num * b.den + b.num * a.den, den: a.den * b.den };
}

export function subtract(a: Fraction, b: Fraction): Fraction {
  return { num: a.num * b.den - b.num * a.den, den: a.den * b.den };
}

/** A percentage as a fraction of one: 3.5 → 35/1000. */
export function percent(value: number): Fraction {
  const p = exact(value);
  return { num: p.num, den: p.den * 100n };
}

/** Integer cents of an amount in EUR, rounded half up (the one rounding step). */
export function toCents(eur: Fraction): bigint {
  const cents = { num: eur.num * 100n, den: eur.den };
  if (cents.num < 0n) return -toCents({ num: -eur.num, den: eur.den });
  return (2n * cents.num + cents.den) / (2n * cents.den);
}

/** a^n for a whole n ≥ 0, exactly. */
export function power(a: Fraction, n: number): Fraction {
  let result: Fraction = { num: 1n, den: 1n };
  for (let i = 0; i < n; i++) result = multiply(result, a);
  return result;
}

/**
 * A ratio or percentage rounded half up to two decimals, as whole hundredths: the same one
 * rounding step as `toCents` (a percentage of 3.5567 → 356 hundredths → 3.56 with `eur`).
 */
export const toHundredths = (value: Fraction): bigint => toCents(value);

export const fromCents = (cents: bigint): Fraction => ({ num: cents, den: 100n });

/** Cents as a EUR number for the wire: an integer divided by 100 prints as its exact decimal. */
export function eur(cents: bigint): number {
  return Number(cents) / 100;
}

/** Whether a fraction is below (negative), at (zero) or above zero. */
export function sign(a: Fraction): -1 | 0 | 1 {
  return a.num === 0n ? 0 : a.num < 0n === a.den < 0n ? 1 : -1;
}
