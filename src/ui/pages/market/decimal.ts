/**
 * Money as the marketplace writes it (docs/marketplace.md "Money is exact"): integer nano-units, shown from the
 * API's exact `_str` text. These helpers read a decimal the user typed into nano-units and write nano-units back,
 * without a double; estimates (a quote off the curve) are doubles and are shown as estimates.
 */
const NANO = 1_000_000_000n

/** A plain decimal the user typed ("12", "0.5", "3.25"), rounded down to 9 decimals as the API does; else undefined. */
export const toNano = (text: string): bigint | undefined => {
  const match = /^(\d+)(?:\.(\d*))?$/.exec(text.trim())
  if (match === null) return undefined
  return BigInt(match[1]!) * NANO + BigInt((match[2] ?? "").padEnd(9, "0").slice(0, 9))
}

export const nanoText = (nano: bigint): string => {
  const sign = nano < 0n ? "-" : ""
  const abs = nano < 0n ? -nano : nano
  const fraction = (abs % NANO).toString().padStart(9, "0").replace(/0+$/, "")
  return `${sign}${abs / NANO}${fraction === "" ? "" : `.${fraction}`}`
}

/** ceil(a · b / c) on integers (the API's fee rounding). */
export const ceilDiv = (a: bigint, c: bigint) => (a + c - 1n) / c

/** A double as plain decimal text with `digits` significant digits (no exponent): for estimates only. */
export const approx = (value: number, digits = 10) =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumSignificantDigits: digits, useGrouping: false }) : "—"

/** A percentage the API gives as a number (price_change_24h), signed, two decimals. */
export const percent = (value: number) => `${value > 0 ? "+" : ""}${value.toFixed(2)} %`
