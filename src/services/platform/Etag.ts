import { createHash } from "node:crypto"

/** A weak validator over a representation's bytes (or over whatever decides it, e.g. assignments). */
export const weakEtag = (text: string) => `W/"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`

/** Whether an If-None-Match header (one tag or a comma-separated list) names `etag`. */
export const etagMatches = (ifNoneMatch: string | undefined, etag: string) =>
  ifNoneMatch?.split(",").some((tag) => tag.trim() === etag) ?? false
