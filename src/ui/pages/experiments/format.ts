/** How the readout's numbers are written on the page (the browser test writes the API's JSON the same way). */

const dash = "—"

/** A proportion as a percentage with one decimal: 0.2 → "20.0 %". */
export const percent = (value: number | null | undefined) =>
  value === null || value === undefined ? dash : `${(value * 100).toFixed(1)}\u00a0%`

/** A relative lift with its sign: 0.2 → "+20.0 %". */
export const lift = (value: number | null | undefined) =>
  value === null || value === undefined
    ? dash
    : `${value > 0 ? "+" : value < 0 ? "−" : ""}${Math.abs(value * 100).toFixed(1)}\u00a0%`

/** A p-value: four significant digits, "< 0.0001" below it. */
export const pValue = (value: number | null | undefined) =>
  value === null || value === undefined
    ? dash
    : value < 0.0001
      ? "< 0.0001"
      : value.toPrecision(4).replace(/0+$/, "").replace(/\.$/, "")

export const count = (value: number) => value.toLocaleString("en-US")

export const interval = (ci: { readonly low: number; readonly high: number } | null) =>
  ci === null ? dash : `${percent(ci.low)}–${percent(ci.high)}`

/** "p = 0.0308", or "p < 0.0001". */
export const pIs = (value: number) => (value < 0.0001 ? "p < 0.0001" : `p = ${pValue(value)}`)
