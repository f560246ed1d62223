/**
 * Money is exact: coin and token quantities are integers of nano-units (10^-9), `bigint` in code and
 * INTEGER in SQL. JSON answers carry numbers rounded to that precision.
 */
export const DECIMALS = 9
export const UNIT = 10n ** BigInt(DECIMALS)

/** A decimal number (as JSON sends it) to nano-units, rounding down: never credits more than asked. */
export const toUnits = (value: number | string): bigint => {
  const text = typeof value === "number" ? value.toFixed(DECIMALS) : value.trim()
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text)
  if (match === null) throw new RangeError(`not a decimal amount: ${text}`)
  const [, sign, whole = "0", fraction = ""] = match
  const units = BigInt(whole) * UNIT + BigInt((fraction + "0".repeat(DECIMALS)).slice(0, DECIMALS))
  return sign === "-" ? -units : units
}

/** Nano-units to a JSON number with at most 9 decimals. */
export const fromUnits = (units: bigint): number => Number(units) / Number(UNIT)

export const ceilDiv = (a: bigint, b: bigint): bigint => (a % b === 0n ? a / b : a / b + (a > 0n === b > 0n ? 1n : 0n))
