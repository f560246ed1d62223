/**
 * Money is exact: coin and token quantities are integers of nano-units (10^-9), `bigint` in code and
 * INTEGER in SQL. JSON answers carry each amount twice: a number (a double, exact only up to 2^53 nano-units)
 * and, in the field of the same name with `_str`, its exact decimal text (docs/marketplace.md, "Money is exact").
 */
export const DECIMALS = 9

/** The largest leg the ledger takes (2^62 nano-units, about 4.6e9 coin or tokens). */
export const MAX_LEG = 2n ** 62n

/**
 * Past this power of ten a non-zero amount exceeds anything the ledger holds (2^62 nano-units is below
 * 10^19): `toUnits` refuses it instead of building the power.
 */
const MAX_SHIFT = 40

/** A decimal as text: sign, whole digits, fraction digits, exponent (what toUnits and canonicalDecimal read). */
const DECIMAL_TEXT = /^(-?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/
export const UNIT = 10n ** BigInt(DECIMALS)

/** A decimal whose value is far above anything the ledger holds (`1e50`): refused before it is built. */
export class AmountTooLarge extends RangeError {
  constructor() {
    super("amount too large")
  }
}

/**
 * A decimal amount to nano-units, exactly: from its decimal text (a JSON number's own text, exponent
 * allowed) or, for a number, its shortest round-trip text (what `JSON.stringify` writes). Digits beyond the
 * ninth decimal are rounded `down` (an amount to spend or to move: never more than asked) or `up` (a
 * minimum to receive: never less than asked).
 */
export const toUnits = (value: number | string, rounding: "down" | "up" = "down"): bigint => {
  const text = typeof value === "number" ? String(value) : value.trim()
  const match = DECIMAL_TEXT.exec(text)
  if (match === null) throw new RangeError(`not a decimal amount: ${text}`)
  const [, sign, whole = "0", fraction = "", exponent = "0"] = match
  // digits × 10^shift nano-units
  const digitsText = `${whole}${fraction}`
  const digits = BigInt(digitsText)
  if (digits === 0n) return 0n
  const shift = Number(exponent) - fraction.length + DECIMALS
  let units: bigint
  if (shift > MAX_SHIFT) throw new AmountTooLarge()
  if (-shift >= digitsText.length) {
    // Below one nano-unit whatever the digits (`1e-99999999`): no power of ten is built to learn it.
    units = (rounding === "up") === (sign !== "-") ? 1n : 0n
  } else if (shift >= 0) units = digits * 10n ** BigInt(shift)
  else {
    const divisor = 10n ** BigInt(-shift)
    units = digits / divisor
    // Rounding is toward the caller's side for a positive amount (a negative one mirrors it).
    if (digits % divisor !== 0n && (rounding === "up") === (sign !== "-")) units += 1n
  }
  return sign === "-" ? -units : units
}

/**
 * A decimal number as one text whatever way it was written (`2`, `2.0`, `2e0`, `0.2E1`, `20e-1` are all
 * `2e0`): the significant digits without leading or trailing zeros and the power of ten of the last one. For
 * comparing the numbers of two requests exactly, never through a double. Text that is no decimal stays itself.
 */
export const canonicalDecimal = (value: number | string): string => {
  const text = typeof value === "number" ? String(value) : value.trim()
  const match = DECIMAL_TEXT.exec(text)
  if (match === null) return text
  const [, sign, whole = "0", fraction = "", exponent = "0"] = match
  const digits = `${whole}${fraction}`.replace(/^0+/, "")
  if (digits === "") return "0"
  // A loop, not /0+$/: that regular expression is quadratic on a long run of zeros followed by a digit.
  let end = digits.length
  while (digits[end - 1] === "0") end--
  const significant = digits.slice(0, end)
  const power = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length)
  return `${sign}${significant}e${power}`
}

const EXACT_DOUBLE = 2n ** 53n

/**
 * Nano-units to a JSON number with at most 9 decimals: the double nearest the exact amount. Up to 2^53 nano-units
 * the one division is exact-then-rounded once; above, `Number(units)` would round first and the division again,
 * so the number is read from the exact text instead.
 */
export const fromUnits = (units: bigint): number =>
  units <= EXACT_DOUBLE && units >= -EXACT_DOUBLE ? Number(units) / Number(UNIT) : Number(unitsText(units))

/** Nano-units as exact decimal text, without trailing zeros (`4611686018.427387904`, `2.5`, `-1`): for messages. */
export const unitsText = (units: bigint): string => {
  const magnitude = units < 0n ? -units : units
  const fraction = String(magnitude % UNIT)
    .padStart(DECIMALS, "0")
    .replace(/0+$/, "")
  return `${units < 0n ? "-" : ""}${magnitude / UNIT}${fraction === "" ? "" : `.${fraction}`}`
}

/** A number as plain decimal text, its shortest round-trip digits without an exponent (`3.1e-7` → `0.00000031`). */
export const plainDecimal = (value: number): string => {
  const [sign, digits, power] = /^(-?)(\d+)e(-?\d+)$/.exec(canonicalDecimal(value))?.slice(1) ?? ["", "0", "0"]
  const shift = Number(power)
  if (shift >= 0) return `${sign}${digits}${"0".repeat(shift)}`
  const padded = digits!.padStart(-shift + 1, "0")
  return `${sign}${padded.slice(0, padded.length + shift)}.${padded.slice(padded.length + shift)}`
}

/**
 * A ratio (a price: coin per token, both in nano-units) as decimal text of 18 significant digits, rounded to
 * the nearest (half away from zero) and computed on integers, never through a double; no exponent, no
 * trailing zeros. The JSON number beside it keeps 12 significant digits.
 */
export const ratioText = (numerator: bigint, denominator: bigint, significant = 18): string => {
  if (denominator === 0n || numerator === 0n) return "0"
  const negative = numerator < 0n !== denominator < 0n
  const n = numerator < 0n ? -numerator : numerator
  const d = denominator < 0n ? -denominator : denominator
  // Decimal places that give `significant` digits: the quotient n / d has about len(n) - len(d) + 1 whole digits.
  let places = significant - (String(n).length - String(d).length + 1)
  const scaled = (p: number) => {
    const top = p >= 0 ? n * 10n ** BigInt(p) : n
    const bottom = p >= 0 ? d : d * 10n ** BigInt(-p)
    return (2n * top + bottom) / (2n * bottom)
  }
  let q = scaled(places)
  // The estimate is off by at most one place either way.
  if (String(q).length < significant) q = scaled(++places)
  if (String(q).length > significant) q = scaled(--places)
  let digits = String(q)
  if (places <= 0) return `${negative ? "-" : ""}${digits}${"0".repeat(-places)}`
  digits = digits.padStart(places + 1, "0")
  const whole = digits.slice(0, digits.length - places)
  let fraction = digits.slice(digits.length - places)
  let end = fraction.length
  while (fraction[end - 1] === "0") end--
  fraction = fraction.slice(0, end)
  return `${negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`
}

export const ceilDiv = (a: bigint, b: bigint): bigint => (a % b === 0n ? a / b : a / b + (a > 0n === b > 0n ? 1n : 0n))
