import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { InvalidObjectKey, ObjectStoreError } from "../../contracts/shared/ObjectErrors.js"
import { ObjectAccess } from "../../services/fleet/control/objects/ObjectAccess.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import type { ObjectHead, WriteCondition } from "../../services/platform/objects/ObjectStore.js"
import { originStripped } from "../RoutePath.js"

const etag = (sha256: string) => `"${sha256}"`

const headHeaders = (head: ObjectHead) => ({
  etag: etag(head.sha256),
  "x-object-sha256": head.sha256,
  "last-modified": new Date(head.modifiedAt).toUTCString()
})

const headAnswer = (head: ObjectHead) => ({
  key: head.key,
  size: head.size,
  sha256: head.sha256,
  modified_at: new Date(head.modifiedAt).toISOString()
})

/** `If-Match: "<sha256>"` (quotes optional, as ETags are quoted), `If-None-Match: *`, or neither. */
const conditionOf = (headers: {
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
const objectKeyOf: Effect.Effect<string, InvalidObjectKey, HttpServerRequest.HttpServerRequest> = Effect.gen(
  function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const encoded = encodedObjectKey(request.url)
    // The router reads a bare ';' as the end of the path: the key it routed by would not be the key named here.
    if (encoded.includes(";")) {
      return yield* new InvalidObjectKey({
        code: "INVALID_OBJECT_KEY",
        key: encoded,
        detail: "a ';' in an object key must be percent-encoded (%3B)"
      })
    }
    try {
      return decodeURIComponent(encoded)
    } catch {
      return yield* new InvalidObjectKey({
        code: "INVALID_OBJECT_KEY",
        key: encoded,
        detail: "an object key must be valid percent-encoded UTF-8"
      })
    }
  }
)

/** The object API: handlers are thin, ObjectAccess holds the rules; bodies stream both ways. */
export const ObjectsLive = HttpApiBuilder.group(ControlPlaneApi, "objects", (handlers) =>
  Effect.gen(function* () {
    const access = yield* ObjectAccess
    return handlers
      .handle("list", ({ headers, urlParams }) =>
        Effect.gen(function* () {
          const prefix = urlParams.prefix ?? ""
          const limit = urlParams.limit ?? 1000
          const page = yield* access.list(bearerToken(headers.authorization), prefix, urlParams.cursor, limit)
          const body = { objects: page.objects.map(headAnswer), next_cursor: page.next }
          if (page.next === null) return body
          const query = new URLSearchParams({ prefix, limit: String(limit), cursor: page.next })
          return HttpServerResponse.unsafeJson(body, { headers: { link: `</api/objects?${query}>; rel="next"` } })
        })
      )
      .handle("get", ({ headers }) =>
        Effect.gen(function* () {
          const found = yield* access.read(bearerToken(headers.authorization), yield* objectKeyOf)
          return HttpServerResponse.stream(found.body, {
            contentType: "application/octet-stream",
            contentLength: found.head.size,
            headers: headHeaders(found.head)
          })
        })
      )
      .handle("head", ({ headers }) =>
        Effect.gen(function* () {
          const head = yield* access.head(bearerToken(headers.authorization), yield* objectKeyOf)
          return HttpServerResponse.empty({
            status: 200,
            headers: { ...headHeaders(head), "content-length": String(head.size) }
          })
        })
      )
      .handle("put", ({ headers }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const key = yield* objectKeyOf
          // A body that cannot be read to its end (the client went away) stores nothing.
          const body = Stream.mapError(
            request.stream,
            () =>
              new ObjectStoreError({
                code: "OBJECT_STORE_ERROR",
                key,
                detail: "the request body could not be read to its end"
              })
          )
          const { created, head } = yield* access.write(
            bearerToken(headers.authorization),
            key,
            body,
            conditionOf(headers)
          )
          return HttpServerResponse.unsafeJson(headAnswer(head), {
            status: created ? 201 : 200,
            headers: { etag: etag(head.sha256) }
          })
        })
      )
      .handle("delete", ({ headers }) =>
        Effect.flatMap(objectKeyOf, (key) => access.delete(bearerToken(headers.authorization), key))
      )
  })
)
