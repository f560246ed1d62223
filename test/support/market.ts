import { createHash } from "node:crypto"
import * as Http from "node:http"
import { HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { Effect } from "effect"
import {
  Agents,
  ApiKeys,
  addressOfPrivateKey,
  Ledger,
  MarketAgent,
  signRequest,
  toUnits,
  walletAccount
} from "./keel.js"

/**
 * Tickers' actors that take every message and never answer: what a caller sees while an actor's runner is dead and
 * its shard not yet taken over (`AppTest({}, { marketAgent: SilentMarketAgent })`).
 */
export const SilentMarketAgent = MarketAgent.toLayer({
  Trade: () => Effect.never,
  TradeBatch: () => Effect.never,
  Accrue: () => Effect.never
})

/** A real secp256k1 key per test wallet, derived from its number so failures are reproducible. */
export const testWallet = (n: number) => {
  const privateKey = `0x${createHash("sha256").update(`keel-test-wallet-${n}`).digest("hex")}`
  return { privateKey, address: addressOfPrivateKey(privateKey) }
}

export interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  // biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field against the seed's contract
  readonly body: any
}

/** One request to the test server: an API key (`bearer`), a wallet signature (`sign`: private key), or neither. */
export const call = (
  method: "GET" | "POST",
  path: string,
  options: {
    readonly body?: unknown
    /** The body's exact text (for numbers JSON.stringify cannot write, e.g. 17 significant digits). */
    readonly rawBody?: string
    readonly bearer?: string
    readonly sign?: string
    readonly headers?: Record<string, string>
  } = {}
) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const text = options.rawBody ?? (options.body === undefined ? "" : JSON.stringify(options.body))
    const headers: Record<string, string> = {
      ...(options.bearer === undefined ? {} : { authorization: `Bearer ${options.bearer}` }),
      ...(options.sign === undefined ? {} : signRequest(options.sign, { method, pathWithQuery: path, body: text })),
      ...options.headers
    }
    const request = (method === "GET" ? HttpClientRequest.get(path) : HttpClientRequest.post(path)).pipe(
      HttpClientRequest.setHeaders(headers),
      options.body === undefined && options.rawBody === undefined
        ? (r) => r
        : HttpClientRequest.bodyText(text, "application/json")
    )
    const response = yield* client.execute(request)
    const raw = yield* response.text
    return {
      status: response.status,
      headers: response.headers as Record<string, string>,
      body: raw.length > 0 && (raw.startsWith("{") || raw.startsWith("[")) ? JSON.parse(raw) : raw
    } satisfies Answer
  }).pipe(Effect.scoped, Effect.orDie)

/** Launches an agent and returns its API key. */
export const launchAgent = (ticker: string, options: { burnRateHourly?: string; name?: string } = {}) =>
  Effect.gen(function* () {
    yield* (yield* Agents).create({
      ticker,
      name: options.name ?? `Agent ${ticker}`,
      description: `The ${ticker} test agent`,
      burnRateHourly: toUnits(options.burnRateHourly ?? "0")
    })
    return (yield* (yield* ApiKeys).create({ agent: ticker })).key
  }).pipe(Effect.orDie)

/** A test wallet with `coin` minted to it and an API key of its own. */
export const fundedWallet = (n: number, coin = "1000") =>
  Effect.gen(function* () {
    const wallet = testWallet(n)
    yield* (yield* Ledger).mint(walletAccount(wallet.address), toUnits(coin), "test funding")
    const { key } = yield* (yield* ApiKeys).create({ wallet: wallet.address })
    return { ...wallet, key }
  }).pipe(Effect.orDie)

export const serverPort = Effect.map(HttpServer.HttpServer, (s) =>
  s.address._tag === "TcpAddress" ? s.address.port : 0
)

/**
 * Reads /api/stream over a plain socket until `done` says enough (or `millis` pass), then hangs up.
 * `ready` runs once the stream is open, to cause the events being waited for.
 */
export const readStream = <A = void, R = never>(
  port: number,
  options: {
    readonly lastEventId?: number
    readonly millis?: number
    readonly done: (text: string) => boolean
    readonly ready?: Effect.Effect<A, never, R>
  }
) =>
  Effect.gen(function* () {
    let text = ""
    let status = 0
    const opened = yield* Effect.async<Http.ClientRequest>((resume) => {
      const request = Http.get(
        {
          host: "127.0.0.1",
          port,
          path: "/api/stream",
          headers: options.lastEventId === undefined ? {} : { "last-event-id": String(options.lastEventId) }
        },
        (response) => {
          status = response.statusCode ?? 0
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => {
            text += chunk
          })
          resume(Effect.succeed(request))
        }
      )
      request.on("error", () => resume(Effect.succeed(request)))
    })
    if (options.ready !== undefined) yield* options.ready
    const deadline = Date.now() + (options.millis ?? 5_000)
    while (!options.done(text) && Date.now() < deadline) yield* Effect.sleep("20 millis")
    opened.destroy()
    return { status, text }
  })
