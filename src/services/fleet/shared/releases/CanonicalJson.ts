/**
 * Canonical JSON (RFC 8785, JCS) for the restricted domain release documents use: strings, safe integers,
 * booleans, null, arrays and plain objects. Keys sort by UTF-16 code units (JavaScript's default sort, as JCS
 * specifies); strings are escaped as JSON.stringify does, which is JCS's escaping. Any other value (a fraction, a
 * non-finite or unsafe number, undefined, a Date, a Map) is refused rather than given a formatting to agree on.
 */
export class NotCanonical extends Error {}

const encode = (value: unknown, path: string): string => {
  if (value === null) return "null"
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "boolean":
      return value ? "true" : "false"
    case "number":
      if (!Number.isSafeInteger(value)) throw new NotCanonical(`${path || "(root)"}: ${value} is not a safe integer`)
      return String(value)
    case "object": {
      if (Array.isArray(value)) return `[${value.map((item, i) => encode(item, `${path}[${i}]`)).join(",")}]`
      if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
        throw new NotCanonical(`${path || "(root)"}: not a plain object`)
      const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${encode(v, path === "" ? k : `${path}.${k}`)}`).join(",")}}`
    }
    default:
      throw new NotCanonical(`${path || "(root)"}: a ${typeof value} has no JSON form`)
  }
}

/** The canonical text of `value`. */
export const canonicalJson = (value: unknown): string => encode(value, "")

/** The canonical bytes of `value` (UTF-8): what is signed, hashed and stored verbatim. */
export const canonicalBytes = (value: unknown): Uint8Array => new TextEncoder().encode(canonicalJson(value))
