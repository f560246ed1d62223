/**
 * Money is exact: coin and token quantities are integers of nano-units (10^-9), `bigint` in code and
 * INTEGER in SQL. JSON answers carry numbers rounded to that precision.
 */
export const DECIMALS = 9
export const UNIT = 10n ** BigInt(DECIMALS)

/**
 * A decimal amount to nano-units, exactly: from its decimal text (a JSON number's own text, exponent
 * allowed) or, for a number, its shortest round-trip text (what `JSON.stringify` writes). Digits beyond the
 * ninth decimal are rounded `down` (an amount to spend or to move: never more than asked) or `up` (a
 * minimum to receive: never less than asked).
 */
export const toUnits = (value: number | string, rounding: "down" | "up" = "down"): bigint => {
  const text = typeof value === "number" ? String(value) : value.trim()
  const match = /^(-?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)
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

/** Nano-units to a JSON number with at most 9 decimals. */
export const fromUnits = (units: bigint): number => Number(units) / Number(UNIT)

export const ceilDiv = (a: bigint, b: bigint): bigint => (a % b === 0n ? a / b : a / b + (a > 0n === b > 0n ? 1n : 0n))
