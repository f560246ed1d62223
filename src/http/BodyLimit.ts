import { isUtf8 } from "node:buffer"
import type * as Http from "node:http"
import { HttpIncomingMessage, HttpMethod, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Deferred, Effect, Option } from "effect"
import { problemResponse } from "./Problem.js"
import { routePath } from "./RoutePath.js"

/** How much of a refused body we read and discard so the client sees the answer instead of a reset. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024
const DRAIN_MAX_MILLIS = 10_000

/** The deepest nesting of arrays and objects a request body may have (`[[1]]` is 2 deep). */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

/**
 * A streaming counter of JSON nesting: fed the body's bytes as they arrive, it answers `true` once
 * arrays and objects nest deeper than `maxDepth`, and stays `true`. One linear pass, no recursion, no
 * parsing: brackets inside strings (escaped quotes included) do not count. Bytes are enough, because
 * every structural character of JSON is ASCII and no byte of a multi-byte UTF-8 character is.
 */
export const makeJsonDepthScanner = (maxDepth: number) => {
  let depth = 0
  let inString = false
  let escaped = false
  let exceeded = false
  return (bytes: Uint8Array): boolean => {
    if (exceeded) return true
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]
      if (inString) {
        if (escaped) escaped = false
        else if (byte === BACKSLASH) escaped = true
        else if (byte === QUOTE) inString = false
      } else if (byte === QUOTE) {
        inString = true
      } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
        depth++
        if (depth > maxDepth) {
          exceeded = true
          return true
        }
      } else if ((byte === CLOSE_BRACKET || byte === CLOSE_BRACE) && depth > 0) {
        depth--
      }
    }
    return false
  }
}

/** Whether a whole JSON text nests deeper than `maxDepth` (whether it is valid JSON is not checked). */
export const jsonTooDeep = (text: string | Uint8Array, maxDepth = MAX_JSON_DEPTH) =>
  makeJsonDepthScanner(maxDepth)(typeof text === "string" ? Buffer.from(text, "utf8") : text)

type Refusal = "too-large" | "too-deep" | "media-type" | "not-json" | "not-utf8"

interface BodyWatch {
  /** Why the body was refused, as soon as it is (synchronously known, unlike the promises). */
  readonly refusal: () => Refusal | undefined
  /** Resolves when the body is refused (never, for an acceptable body). */
  readonly refused: Promise<Refusal>
  /** Whether the whole body has arrived within both limits. */
  readonly isComplete: () => boolean
  /** Resolves when the whole body has arrived within both limits (never, for a refused one). */
  readonly complete: Promise<void>
  /** Resolves when a refused body has been read to its end, or draining gave up. */
  readonly drained: Promise<boolean>
}

/**
 * How many bytes at the end of `bytes` begin a UTF-8 character that has not arrived whole yet (0 to 3): they
 * are checked with the next chunk. Anything else is left to `isUtf8`, which refuses it.
 */
const incompleteTail = (bytes: Uint8Array) => {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue // a continuation byte: look further back for its lead
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? back : 0
  }
  return 0
}

const chunkBytes = (chunk: unknown, encoding?: BufferEncoding): Uint8Array =>
  typeof chunk === "string" ? Buffer.from(chunk, encoding) : (chunk as Uint8Array)

/**
 * Counts and scans the bytes Node's HTTP parser pushes into the request, whatever the framing
 * (Content-Length or chunked), including what it pushed before the watch began. Once the body is over
 * the size limit or nests JSON too deep, further bytes are discarded instead of being handed to a
 * reader, the end is withheld (no reader may take a truncated body for a whole one), and the request is
 * kept open (not destroyed) until the client has finished sending, so the answer reaches it.
 */
const watchBody = (
  req: Http.IncomingMessage,
  limit: number,
  maxDepth: number,
  refusedUpfront: Refusal | undefined
): BodyWatch => {
  let resolveRefused!: (refusal: Refusal) => void
  let resolveComplete!: () => void
  let resolveDrained!: (complete: boolean) => void
  const refused = new Promise<Refusal>((resolve) => {
    resolveRefused = resolve
  })
  const complete = new Promise<void>((resolve) => {
    resolveComplete = resolve
  })
  const drained = new Promise<boolean>((resolve) => {
    resolveDrained = resolve
  })
  // A route that does not take JSON (maxDepth infinite) has nothing to scan.
  const scan = Number.isFinite(maxDepth) ? makeJsonDepthScanner(maxDepth) : () => false
  // JSON text is UTF-8 (RFC 8259): a byte sequence that is not would be read with U+FFFD in its place, and stored
  // changed. Checked as the bytes arrive (a character may straddle two chunks: its start is carried over).
  const checkUtf8 = Number.isFinite(maxDepth)
  let carry: Uint8Array = new Uint8Array(0)
  const validUtf8 = (bytes?: Uint8Array) => {
    if (!checkUtf8) return true
    if (bytes === undefined) return carry.length === 0
    const all = carry.length === 0 ? bytes : Buffer.concat([carry, bytes])
    const cut = all.length - incompleteTail(all)
    carry = all.subarray(cut)
    return isUtf8(all.subarray(0, cut))
  }
  // Node ends the request stream once the parser has seen the whole message: it may already have.
  let ended = req.complete
  let refusal: Refusal | undefined
  let seen = 0
  let discarded = 0
  const originalPush = req.push.bind(req)
  const originalDestroy = req.destroy.bind(req)
  const refuse = (reason: Refusal) => {
    refusal = reason
    // A reader interrupted by the refusal releases its stream with destroy(); keep the socket for the answer.
    req.destroy = ((error?: Error) => (error ? originalDestroy(error) : req)) as typeof req.destroy
    if (ended) resolveDrained(true)
    const timer = setTimeout(() => resolveDrained(false), DRAIN_MAX_MILLIS)
    timer.unref()
    void drained.then(() => clearTimeout(timer))
    resolveRefused(reason)
  }
  /** Takes one chunk of the body into account; answers whether it may be passed on. */
  const admit = (bytes: Uint8Array) => {
    seen += bytes.byteLength
    if (seen > limit) refuse("too-large")
    else if (scan(bytes)) refuse("too-deep")
    else if (!validUtf8(bytes)) refuse("not-utf8")
    return refusal === undefined
  }
  /** The whole body has arrived: a character cut off at its end is no UTF-8 either. */
  const finish = () => {
    if (refusal === undefined && !validUtf8()) refuse("not-utf8")
    return refusal === undefined
  }
  if (refusedUpfront !== undefined) refuse(refusedUpfront)
  const buffered = (req as unknown as { readonly readableBuffer?: Iterable<unknown> }).readableBuffer
  for (const chunk of buffered ?? []) {
    if (refusal !== undefined || !admit(chunkBytes(chunk))) break
  }
  if (ended && refusal === undefined && finish()) resolveComplete()
  req.push = ((chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk === null) {
      ended = true
      if (refusal !== undefined || !finish()) {
        resolveDrained(true)
        return false
      }
      resolveComplete()
      return originalPush(chunk, encoding)
    }
    const bytes = chunkBytes(chunk, encoding)
    if (refusal !== undefined) {
      discarded += bytes.byteLength
      if (discarded > DRAIN_MAX_BYTES) resolveDrained(false)
      return true
    }
    return admit(bytes) ? originalPush(chunk, encoding) : true
  }) as typeof req.push
  return {
    refusal: () => refusal,
    refused,
    isComplete: () => ended && refusal === undefined,
    complete,
    drained
  }
}

const refusalResponse = (refusal: Refusal, limit: number, maxDepth: number, close: boolean) => {
  const headers = close ? { connection: "close" } : undefined
  switch (refusal) {
    case "too-large":
      return problemResponse(413, "PAYLOAD_TOO_LARGE", `request body exceeds the limit of ${limit} bytes`, {
        extensions: { limit_bytes: limit },
        ...(headers ? { headers } : {})
      })
    case "too-deep":
      return problemResponse(
        400,
        "JSON_TOO_DEEP",
        `request body nests arrays and objects deeper than the limit of ${maxDepth} levels`,
        { extensions: { max_depth: maxDepth }, ...(headers ? { headers } : {}) }
      )
    case "media-type":
      return problemResponse(
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "request bodies are JSON; multipart/form-data and application/x-www-form-urlencoded are not accepted",
        headers ? { headers } : {}
      )
    case "not-utf8":
      return problemResponse(400, "INVALID_JSON", "request body is not valid JSON", headers ? { headers } : {})
    case "not-json":
      return problemResponse(
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "request bodies are JSON: send them with Content-Type: application/json",
        headers ? { headers } : {}
      )
  }
}

/** A Content-Type's media type, without its parameters, lower-case (`""` for none). */
const mediaType = (contentType: string | undefined) => (contentType?.split(";")[0] ?? "").trim().toLowerCase()

/**
 * A declared Content-Type that is not JSON. The platform decodes a body by its Content-Type: JSON sent as
 * `text/plain` would reach the route as one string, and as `application/vnd.api+json` as no fields at all, so
 * the route's refusal would name the wrong thing. No Content-Type at all (or an empty one) is read as JSON.
 */
const isNotJson = (contentType: string | undefined) => {
  const type = mediaType(contentType)
  // An empty header is no Content-Type (the platform reads the body as JSON).
  return type !== "" && type !== "application/json"
}

/**
 * The form encodings the platform would decode into fields instead of JSON. No Keel route takes one, and
 * both misbehave on a JSON route: the multipart reader never answers an empty or truncated body, and a
 * JSON text sent as a form becomes one field whose name is the whole body (which a refusal then names).
 */
const isFormEncoded = (contentType: string | undefined) => {
  const type = mediaType(contentType)
  return type.startsWith("multipart/") || type.startsWith("application/x-www-form-urlencoded")
}

export interface BodyGuardOptions {
  /** The deepest JSON nesting a body may have; MAX_JSON_DEPTH (64) by default. */
  readonly maxJsonDepth?: number
  /**
   * Whether the route at a path takes JSON (all by default). A route that takes raw bytes (the object API)
   * has its size counted but is neither scanned for nesting nor refused for a form Content-Type.
   */
  readonly isJson?: (path: string) => boolean
  /**
   * Whether the JSON route at a path reads its body as JSON whatever its Content-Type (the collectors, which
   * browsers' `sendBeacon` feeds as `text/plain`). Every other JSON route refuses a body declared as anything
   * but `application/json` (415). None by default.
   */
  readonly anyContentType?: (path: string) => boolean
}

/**
 * Guards every request body before any route reads it, whatever the method and framing
 * (Content-Length or chunked):
 * - over the size limit (one for all routes, or one per path) → 413 `PAYLOAD_TOO_LARGE`;
 * - arrays and objects nested deeper than `maxJsonDepth` → 400 `JSON_TOO_DEEP`, counted on the bytes as
 *   they arrive, so nothing deeper ever reaches a JSON parser, a decoder or an error formatter;
 * - a form-encoded body (multipart/form-data, application/x-www-form-urlencoded) → 415
 *   `UNSUPPORTED_MEDIA_TYPE`: no Keel route takes one (see isFormEncoded); so is a body declared as
 *   anything but `application/json`, except on the routes that take JSON whatever its type (`anyContentType`).
 * Every Keel route that takes a body takes JSON (the collectors whatever the Content-Type), so every
 * body is scanned. A route that answers without reading its body (a GET, a refusal before decoding)
 * still has its body received, counted and scanned before the answer leaves, so the outcome does not
 * depend on the route. The platform's own reader limit would reset the connection instead; it is
 * lifted here because this guard enforces the limit first.
 */
/**
 * Whether the query string is valid percent-encoded UTF-8. The platform's parser keeps a bad sequence as
 * text (`subject=inv%zz` is `inv%zz`, the same value `inv%25zz` sends) and turns bad UTF-8 into U+FFFD, so two
 * different requests would read as one: refused instead, before any route or fast path reads the query.
 */
export const validQueryEncoding = (url: string) => {
  const at = url.indexOf("?")
  if (at < 0) return true
  const query = url.slice(at + 1)
  if (!query.includes("%")) return true
  try {
    decodeURIComponent(query)
    return true
  } catch {
    return false
  }
}

const QUERY_ENCODING = "the query string is not valid percent-encoded UTF-8 (a literal % is %25)"
const invalidQueryEncoding = () =>
  problemResponse(400, "VALIDATION_FAILED", QUERY_ENCODING, {
    extensions: { errors: [{ path: "", message: QUERY_ENCODING }] }
  })

/**
 * Headers that must arrive once. Node joins a repeated header into one value with ", ", so two
 * `Idempotency-Key` headers would read as a third, new key — and a retried trade would run again.
 */
const SINGLE_HEADERS = ["idempotency-key"] as const

/**
 * The name of a header that must arrive once but came several times, if any: Node joins two header lines into
 * `a, b`, and a proxy that merges them (as RFC 9110 allows) writes the same. A single value holding a comma not
 * followed by a space is a value.
 */
export const repeatedSingleHeader = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  for (const name of SINGLE_HEADERS) {
    const value = request.headers[name]
    if (value !== undefined && /,\s/.test(value)) return name
  }
  return undefined
}

const repeatedHeader = (name: string) => {
  const message = `${name}: must be sent once (it was sent several times)`
  return problemResponse(400, "VALIDATION_FAILED", message, {
    extensions: { errors: [{ path: name, message: "must be sent once" }] }
  })
}

/** RFC 9112 §3.2: an HTTP/1.1 request without Host is answered 400 (Node's own answer had no body). */
const missingHost = () =>
  problemResponse(400, "BAD_REQUEST", "an HTTP/1.1 request needs a Host header", { headers: { connection: "close" } })

export const bodyLimitMiddleware =
  (limitFor: number | ((path: string) => number), options: BodyGuardOptions = {}) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function* () {
      // The guard enforces the limit itself, before the route reads: the platform's own limit (10 MiB) is
      // lifted for the bodies that may exceed it. A body that is absent or already here whole (at most the
      // stream's buffer, 16 KiB) is read under it unchanged, which spares the hot paths a copy of the
      // request's context (`provideService` copies every service in it).
      const route = app.pipe(HttpIncomingMessage.withMaxBodySize(Option.none()))
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!validQueryEncoding(request.url)) return invalidQueryEncoding()
      const repeated = repeatedSingleHeader(request)
      if (repeated !== undefined) return repeatedHeader(repeated)
      if (request.headers.host === undefined && NodeHttpServerRequest.toIncomingMessage(request).httpVersion === "1.1")
        return missingHost()
      const path = routePath(request.url)
      const limit = typeof limitFor === "number" ? limitFor : limitFor(path)
      const json = options.isJson?.(path) ?? true
      const maxDepth = json ? (options.maxJsonDepth ?? MAX_JSON_DEPTH) : Number.POSITIVE_INFINITY
      const lengthHeader = request.headers["content-length"]
      const chunked = request.headers["transfer-encoding"] !== undefined
      const declared = lengthHeader === undefined ? 0 : Number(lengthHeader)
      const hasBody = chunked || declared > 0
      const formEncoded = json && isFormEncoded(request.headers["content-type"])
      const notJson =
        json && !formEncoded && !options.anyContentType?.(path) && isNotJson(request.headers["content-type"])
      // No body at all (Node frames a Content-Length body exactly): nothing to guard, except a form
      // encoding on a method that takes a body (the multipart reader would wait forever for it).
      if (!hasBody) {
        if (formEncoded && HttpMethod.hasBody(request.method)) {
          return yield* refusalResponse("media-type", limit, maxDepth, false)
        }
        return yield* app
      }
      const req = NodeHttpServerRequest.toIncomingMessage(request)
      const watch = watchBody(
        req,
        limit,
        maxDepth,
        !chunked && declared > limit ? "too-large" : formEncoded ? "media-type" : notJson ? "not-json" : undefined
      )
      const answerRefusal = (refusal: Refusal) =>
        Effect.gen(function* () {
          // Whatever is still buffered or on its way is discarded (and the socket read again if the
          // parser had paused it for an unread body).
          req.resume()
          yield* Effect.promise(() => watch.drained)
          return yield* refusalResponse(refusal, limit, maxDepth, true)
        })
      // Until the whole body has arrived within the limits, or it is refused. Interruptible, though the server
      // runs this chain uninterruptibly: a client that goes away mid-body must not leave the request waiting.
      const bodySettled = Effect.interruptible(Effect.promise(() => Promise.race([watch.complete, watch.refused])))
      const early = watch.refusal()
      if (early !== undefined) return yield* answerRefusal(early)
      // The usual small body has arrived whole with its headers and was counted and scanned above: no
      // refusal can follow, so the route runs without the race (a fiber pair per request on the hot paths).
      const small = !chunked && declared <= req.readableHighWaterMark
      if (watch.isComplete()) return yield* small ? app : route
      // A small body (within what the request stream buffers with nobody reading it, so it arrives whole
      // without a reader) is awaited before the route runs: the route then starts on a body already counted
      // and scanned, and one wait replaces the race below (two fibers and a deferred: ≈ 150 µs a request measured on
      // the hot paths, whose bodies the parser usually delivers just after the request has started).
      if (small) {
        yield* bodySettled
        const refusal = watch.refusal()
        return refusal === undefined ? yield* app : yield* answerRefusal(refusal)
      }
      const signal = yield* Deferred.make<void>()
      void watch.refused.then(() => Deferred.unsafeDone(signal, Effect.void))
      // The server runs this chain uninterruptibly; the race must be able to stop its loser, so
      // that a handler reading a refused body never sees it (it is interrupted, not fed a stub).
      const answered = yield* Effect.interruptible(
        Effect.raceFirst(route.pipe(Effect.map(Option.some)), Deferred.await(signal).pipe(Effect.as(Option.none())))
      )
      if (Option.isNone(answered)) return yield* answerRefusal(watch.refusal() ?? "too-large")
      if (!watch.isComplete() && watch.refusal() === undefined) {
        // The route answered without reading (all of) its body: read the rest here, still counting and
        // scanning it, and discard it. A client that stops sending is cut off by the server's timeouts.
        req.resume()
        yield* bodySettled
      }
      const late = watch.refusal()
      return late === undefined ? answered.value : yield* answerRefusal(late)
    })
