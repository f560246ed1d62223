/** How the Fleet pages write figures (the tests write them the same way to compare with the API's answers). */

/** Bytes as GiB with two decimals ("null" is never shown as zero: a reading that is missing says so). */
export const gib = (bytes: number | null | undefined) =>
  bytes === null || bytes === undefined ? "unknown" : `${(bytes / 1024 ** 3).toFixed(2)} GiB`

export const age = (seconds: number | null | undefined) => {
  if (seconds === null || seconds === undefined) return "no report"
  if (seconds < 120) return `${seconds} s ago`
  if (seconds < 7200) return `${Math.round(seconds / 60)} min ago`
  return `${Math.round(seconds / 3600)} h ago`
}

/** A field of a document relayed as stored (capacity, janitor: described as any JSON), read without trusting it. */
export const field = (document: unknown, ...path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>(
    (value, key) =>
      value !== null && typeof value === "object" && !Array.isArray(value)
        ? (value as Record<string, unknown>)[key]
        : undefined,
    document
  )

export const text = (value: unknown) =>
  value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value)
