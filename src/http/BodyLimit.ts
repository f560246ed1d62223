import type * as Http from "node:http"
import { HttpIncomingMessage, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Deferred, Effect, Option } from "effect"
import { problemResponse } from "./Problem.js"

/** How much of a refused body we read and discard so the client sees the 413 instead of a reset. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024
const DRAIN_MAX_MILLIS = 10_000

interface BodyWatch {
  /** Resolves when the body crossed the limit (never, for a body within it). */
  readonly exceeded: Promise<void>
  /** Resolves when the refused body has been read to its end, or draining gave up. */
  readonly drained: Promise<boolean>
}

/**
 * Counts the bytes Node's HTTP parser pushes into the request, whatever the framing
 * (Content-Length or chunked). Past the limit, further bytes are discarded instead of being
 * handed to a reader, and the request is kept open (not destroyed) until the client has
 * finished sending, so the 413 answer reaches it.
 */
const watchBody = (req: Http.IncomingMessage, limit: number, declaredTooLarge: boolean): BodyWatch => {
  let resolveExceeded!: () => void
  let resolveDrained!: (complete: boolean) => void
  const exceeded = new Promise<void>((resolve) => {
    resolveExceeded = resolve
  })
  const drained = new Promise<boolean>((resolve) => {
    resolveDrained = resolve
  })
  let seen = req.readableLength
  let over = false
  let discarded = 0
  const originalPush = req.push.bind(req)
  const originalDestroy = req.destroy.bind(req)
  const trip = () => {
    over = true
    // A reader interrupted by the 413 releases its stream with destroy(); keep the socket for the answer.
    req.destroy = ((error?: Error) => (error ? originalDestroy(error) : req)) as typeof req.destroy
    const timer = setTimeout(() => resolveDrained(false), DRAIN_MAX_MILLIS)
    timer.unref()
    void drained.then(() => clearTimeout(timer))
    resolveExceeded()
  }
  req.push = ((chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk === null) {
      // Past the limit the end is not passed on: no reader may take a truncated body for a whole one.
      if (over) {
        resolveDrained(true)
        return false
      }
      return originalPush(chunk, encoding)
    }
    const size = typeof chunk === "string" ? Buffer.byteLength(chunk) : (chunk as Uint8Array).byteLength
    if (over) {
      discarded += size
      if (discarded > DRAIN_MAX_BYTES) resolveDrained(false)
      return true
    }
    seen += size
    if (seen > limit) {
      trip()
      return true
    }
    return originalPush(chunk, encoding)
  }) as typeof req.push
  if (declaredTooLarge) trip()
  return { exceeded, drained }
}

const tooLarge = (limit: number) =>
  problemResponse(413, "PAYLOAD_TOO_LARGE", `request body exceeds the limit of ${limit} bytes`, {
    extensions: { limit_bytes: limit },
    headers: { connection: "close" }
  })

/**
 * Refuses request bodies over the limit (one for all routes, or one per path) with 413 in the problem shape, for declared
 * (Content-Length) and streamed (chunked) bodies alike. The platform's own reader limit would
 * reset the connection instead; it is lifted here because this guard enforces the limit first.
 */
export const bodyLimitMiddleware =
  (limitFor: number | ((path: string) => number)) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const limit = typeof limitFor === "number" ? limitFor : limitFor(request.url.split("?")[0] ?? request.url)
      const lengthHeader = request.headers["content-length"]
      const chunked = request.headers["transfer-encoding"] !== undefined
      const declared = lengthHeader === undefined ? 0 : Number(lengthHeader)
      // Node frames a Content-Length body exactly, so a declared size within the limit (or no body at
      // all) needs no watching: only streamed bodies and declared oversize ones take the guarded path.
      if (!chunked && Number.isFinite(declared) && declared <= limit) {
        return yield* app.pipe(HttpIncomingMessage.withMaxBodySize(Option.none()))
      }
      const req = NodeHttpServerRequest.toIncomingMessage(request)
      const watch = watchBody(req, limit, !chunked || declared > limit)
      const signal = yield* Deferred.make<void>()
      void watch.exceeded.then(() => Deferred.unsafeDone(signal, Effect.void))
      // The server runs this chain uninterruptibly; the race must be able to stop its loser, so
      // that a handler reading a refused body never sees it (it is interrupted, not fed a stub).
      const answered = yield* Effect.interruptible(
        Effect.raceFirst(
          app.pipe(HttpIncomingMessage.withMaxBodySize(Option.none()), Effect.map(Option.some)),
          Deferred.await(signal).pipe(Effect.as(Option.none()))
        )
      )
      if (Option.isSome(answered)) return answered.value
      yield* Effect.promise(() => watch.drained)
      return tooLarge(limit)
    })
