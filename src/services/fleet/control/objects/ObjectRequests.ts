import { Effect } from "effect"
import { InvalidObjectKey } from "../../../../contracts/shared/ObjectErrors.js"
import type { ObjectHead, WriteCondition } from "../../../platform/objects/ObjectStore.js"
import { originStripped } from "../../../platform/RequestTarget.js"

/**
 * How the object API reads its requests and writes its answers (docs/control-plane.md, "Object API"): the key from
 * the request path, the write condition from `If-Match`/`If-None-Match`, an object's head as headers and as JSON.
 */

const etag = (sha256: string) => `"${sha256}"`

/** An object's headers: its SHA-256 as ETag and X-Object-Sha256, and when it was last written. */
export const headHeaders = (head: ObjectHead) => ({
  etag: etag(head.sha256),
  "x-object-sha256": head.sha256,
  "last-modified": new Date(head.modifiedAt).toUTCString()
})

/** An object's head as the API's JSON answers it. */
export const headAnswer = (head: ObjectHead) => ({
  key: head.key,
  size: head.size,
  sha256: head.sha256,
  modified_at: new Date(head.modifiedAt).toISOString()
})

/** The ETag header of a written object. */
export const writtenHeaders = (head: ObjectHead) => ({ etag: etag(head.sha256) })

/** The `Link` header of a listing page that has a next one. */
export const nextPageLink = (prefix: string, limit: number, cursor: string) =>
  `</api/objects?${new URLSearchParams({ prefix, limit: String(limit), cursor })}>; rel="next"`

/** `If-Match: "<sha256>"` (quotes optional, as ETags are quoted), `If-None-Match: *`, or neither. */
export const writeCondition = (headers: {
  readonly "if-match"?: string | undefined
  readonly "if-none-match"?: string | undefined
}): WriteCondition =>
  headers["if-none-match"] === "*"
    ? { kind: "absent" }
    : headers["if-match"] !== undefined
      ? { kind: "match", sha256: headers["if-match"].replace(/"/g, "") }
      : { kind: "always" }

/**
 * The part of a request path after its `/api/objects/` prefix, as sent: the prefix read as the router reads it
 * (a full URL's scheme and host skipped, repeated slashes, any case, percent-encoded letters), the key untouched.
 */
export const encodedObjectKey = (url: string) => {
  const pathname = originStripped(url).split(/[?#]/)[0] ?? ""
  const segments = pathname.split("/")
  let at = 0
  for (const name of ["api", "objects"]) {
    while (at < segments.length && segments[at] === "") at++
    const segment = segments[at] ?? ""
    let decoded = segment
    try {
      decoded = decodeURIComponent(segment)
    } catch {}
    if (decoded.toLowerCase() !== name) return pathname
    at++
  }
  return segments.slice(at).join("/")
}

/**
 * The key as the client wrote it: the request path after /api/objects/, percent-decoded. The router's own
 * parameter has duplicate and trailing slashes folded and dot segments resolved, which would turn an invalid
 * key into another valid one; a key is refused (400 INVALID_OBJECT_KEY), never reinterpreted.
 */
export const objectKeyOfUrl = (url: string): Effect.Effect<string, InvalidObjectKey> => {
  const encoded = encodedObjectKey(url)
  const invalid = (detail: string) =>
    Effect.fail(new InvalidObjectKey({ code: "INVALID_OBJECT_KEY", key: encoded, detail }))
  // The router reads a bare ';' as the end of the path: the key it routed by would not be the key named here.
  if (encoded.includes(";")) return invalid("a ';' in an object key must be percent-encoded (%3B)")
  try {
    return Effect.succeed(decodeURIComponent(encoded))
  } catch {
    return invalid("an object key must be valid percent-encoded UTF-8")
  }
}
