/**
 * Money is exact: coin and token quantities are integers of nano-units (10^-9), `bigint` in code and
 * INTEGER in SQL. JSON answers carry numbers rounded to that precision.
 */
export const DECIMALS = 9

/** A decimal as text: sign, whole digits, fraction digits, exponent (what toUnits and canonicalDecimal read). */
const DECIMAL_TEXT = /^(-?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/
export const UNIT = 10n ** BigInt(DECIMALS)

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
  const digits = BigInt(`${whole}${fraction}`)
  const shift = Number(exponent) - fraction.length + DECIMALS
  let units: bigint
  if (shift >= 0) units = digits * 10n ** BigInt(shift)
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
  const significant = digits.replace(/0+$/, "")
  const power = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length)
  return `${sign}${significant}e${power}`
}

/** Nano-units to a JSON number with at most 9 decimals. */
export const fromUnits = (units: bigint): number => Number(units) / Number(UNIT)

/** Nano-units as exact decimal text, without trailing zeros (`4611686018.427387904`, `2.5`, `-1`): for messages. */
export const unitsText = (units: bigint): string => {
  const magnitude = units < 0n ? -units : units
  const fraction = String(magnitude % UNIT)
    .padStart(DECIMALS, "0")
    .replace(/0+$/, "")
  return `${units < 0n ? "-" : ""}${magnitude / UNIT}${fraction === "" ? "" : `.${fraction}`}`
}

export const ceilDiv = (a: bigint, b: bigint): bigint => (a % b === 0n ? a / b : a / b + (a > 0n === b > 0n ? 1n : 0n))
