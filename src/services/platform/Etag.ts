import { createHash } from "node:crypto"

/** A weak validator over a representation's bytes (or over whatever decides it, e.g. assignments). */
export const weakEtag = (text: string) => `W/"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`

/** A tag without its weakness mark: `W/"x"` and `"x"` are the same tag to a weak comparison. */
const opaque = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag)

/**
 * Whether an If-None-Match header names the current representation (RFC 9110 §13.1.2): `*` (any current
 * one), or a list of tags compared weakly — `W/"x"` and `"x"` both match `W/"x"`.
 */
export const etagMatches = (ifNoneMatch: string | undefined, etag: string) => {
  if (ifNoneMatch === undefined) return false
  const current = opaque(etag)
  return ifNoneMatch.split(",").some((tag) => {
    const trimmed = tag.trim()
    return trimmed === "*" || opaque(trimmed) === current
  })
}
