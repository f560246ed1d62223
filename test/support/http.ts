import * as Net from "node:net"
import { HttpLayerRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { type ConfigError, ConfigProvider, Duration, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "./keel.js"
import {
  type AppSettings,
  AppTest,
  type FastPath,
  httpRoutes,
  nodeServer,
  ROUTER_CONFIG,
  type ServeOptions
} from "./keel.js"

/**
 * Keel's own Node server (as `ctl serve` runs it: its parser-error answers, its shutdown) on a random port,
 * with an HttpClient whose base URL points at it, as NodeHttpServer.layerTest does for a bare server.
 */
const TestServer = HttpServer.layerTestClient.pipe(
  Layer.provide(NodeHttpClient.layerWithoutAgent),
  Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: false })),
  // "::" is what NodeHttpServer.layerTest listens on (no host given): every address, IPv4 and IPv6.
  Layer.provideMerge(nodeServer({ host: "::", port: 0, grace: Duration.seconds(1) }))
)

/**
 * A real HTTP server on a random loopback port serving the chosen surfaces on the Test layer, and an
 * HttpClient whose base URL points at it.
 */
export const HttpTest = (
  options: ServeOptions & {
    readonly settings?: Partial<AppSettings>
    /** The application graph behind the routes; the full Test layer by default. */
    readonly app?: Layer.Layer<
      Layer.Layer.Success<ReturnType<typeof AppTest>>,
      ConfigError.ConfigError | DatabaseUnavailable
    >
    /** Environment variables the layers read through Config (instead of process.env). */
    readonly env?: Record<string, string>
  } = {}
) =>
  HttpLayerRouter.serve(httpRoutes(options), {
    disableLogger: true,
    disableListenLog: true,
    routerConfig: ROUTER_CONFIG
  }).pipe(
    // The application graph stays visible to the tests (SqlClient, services) beside the HttpClient.
    Layer.provideMerge(options.app ?? AppTest(options.settings)),
    Layer.provideMerge(TestServer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(options.env ?? {})))))
  )

export interface RawResponse {
  readonly status: number
  /** The status line's reason phrase. */
  readonly statusMessage: string
  readonly headers: Record<string, string>
  readonly body: string
}

/**
 * Sends bytes over a plain socket and reads the whole answer: for what an HTTP client library would
 * refuse to send (lying or absent Content-Length, chunked uploads, malformed framing). With `pauseMillis`,
 * each part of the body after the first is written that long after the one before (a slow client).
 */
export const rawRequest = (
  port: number,
  head: string,
  body: ReadonlyArray<Uint8Array | string> = [],
  options: { readonly pauseMillis?: number } = {}
) =>
  Effect.async<RawResponse, Error>((resume) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("error", (error) => resume(Effect.fail(error)))
    socket.on("end", () => resume(Effect.succeed(parseRawResponse(Buffer.concat(chunks)))))
    socket.on("connect", () => {
      socket.write(head)
      const write = (i: number) => {
        const part = body[i]
        if (part === undefined) return
        const next = () =>
          options.pauseMillis === undefined ? write(i + 1) : setTimeout(() => write(i + 1), options.pauseMillis)
        if (socket.write(part)) setImmediate(next)
        else socket.once("drain", next)
      }
      write(0)
    })
    return Effect.sync(() => socket.destroy())
  })

/** One whole HTTP/1.1 answer, as read until the server closed the connection. */
const parseRawResponse = (bytes: Buffer): RawResponse => {
  const text = bytes.toString("utf8")
  const [rawHead = "", ...rest] = text.split("\r\n\r\n")
  const [statusLine = "", ...headerLines] = rawHead.split("\r\n")
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const i = line.indexOf(":")
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
  }
  let payload = rest.join("\r\n\r\n")
  if (headers["transfer-encoding"] === "chunked") payload = dechunk(payload)
  const [, status = "", ...reason] = statusLine.split(" ")
  return { status: Number(status), statusMessage: reason.join(" "), headers, body: payload }
}

/**
 * Sends whole requests (`Connection: close` each) at once, one per socket: every socket is first opened and
 * warmed with a keep-alive `GET /health` (so the server has accepted them all), then all requests are
 * written in the same turn of the event loop, and the server finds them readable together, as under a real
 * burst from many clients (a client library would spread its connections out).
 */
export const rawBurst = (port: number, requests: ReadonlyArray<string>) =>
  Effect.async<ReadonlyArray<RawResponse>, Error>((resume) => {
    const answers: Array<RawResponse | undefined> = requests.map(() => undefined)
    let warmed = 0
    let answered = 0
    const sockets = requests.map((_request, index) => {
      const socket = Net.connect({ host: "127.0.0.1", port })
      let chunks: Array<Buffer> = []
      let warm = false
      socket.on("data", (chunk) => {
        chunks.push(chunk)
        if (warm) return
        const text = Buffer.concat(chunks).toString("utf8")
        const headEnd = text.indexOf("\r\n\r\n")
        const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? Number.NaN)
        if (headEnd < 0 || Buffer.byteLength(text) < headEnd + 4 + length) return
        warm = true
        chunks = []
        if (++warmed === requests.length) for (const [i, s] of sockets.entries()) s.write(requests[i]!)
      })
      socket.on("error", (error) => resume(Effect.fail(error)))
      socket.on("end", () => {
        answers[index] = parseRawResponse(Buffer.concat(chunks))
        if (++answered === requests.length) resume(Effect.succeed(answers as Array<RawResponse>))
      })
      socket.on("connect", () => socket.write("GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"))
      return socket
    })
    return Effect.sync(() => {
      for (const socket of sockets) socket.destroy()
    })
  })

const dechunk = (payload: string) => {
  let out = ""
  let rest = payload
  for (;;) {
    const i = rest.indexOf("\r\n")
    if (i < 0) return out
    const size = Number.parseInt(rest.slice(0, i), 16)
    if (!size) return out
    out += rest.slice(i + 2, i + 2 + size)
    rest = rest.slice(i + 2 + size + 2)
  }
}

export const chunkedBody = (total: number, chunkSize = 64 * 1024) => {
  const parts: Array<string> = []
  const chunk = "x".repeat(chunkSize)
  for (let sent = 0; sent < total; sent += chunkSize) {
    parts.push(`${chunkSize.toString(16)}\r\n${chunk}\r\n`)
  }
  parts.push("0\r\n\r\n")
  return parts
}

/**
 * Hands one request to a fast path (src/http/FastPath.ts) as the server would, behind it a route that answers
 * 599: whether the fast path answered the request itself or passed it on, and the status it got.
 */
export const throughFastPath = (fastPath: FastPath, request: Request) =>
  Effect.gen(function* () {
    let passedOn = false
    const app = Effect.sync(() => {
      passedOn = true
      return HttpServerResponse.empty({ status: 599 })
    })
    const response = yield* fastPath(app).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(request))
    )
    return { passedOn, status: response.status }
  })
