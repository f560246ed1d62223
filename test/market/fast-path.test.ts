import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest, type RawResponse, rawRequest, throughFastPath } from "../support/http.js"
import { signRequest, tradeFastPath } from "../support/keel.js"
import { fundedWallet, launchAgent, serverPort } from "../support/market.js"

// The trade fast path (src/http/marketplace/TradeFastPath.ts) must answer exactly as the HttpApi route does.
// The same recorded set of requests is sent to a server with it and to one without it (each with a fresh
// database), and every answer is compared byte for byte: status line, headers, body.

interface Recorded {
  readonly label: string
  readonly path: string
  readonly headers?: Record<string, string>
  /** The body's exact text. */
  readonly body?: string
  readonly contentType?: string
}

const TRADING_LIMIT = 24

// A window long enough that the burst cannot earn back a request while it is sent, however loaded the machine
// (each trade adds window/limit = 25 s of allowance; at the default minute it was 2.5 s, and a slow burst lost a 429).
const WINDOW_SECONDS = 600

const env = (fast: boolean) => ({
  KEEL_FAST_PATHS: String(fast),
  MARKET_RATE_LIMIT_TRADING: String(TRADING_LIMIT),
  MARKET_RATE_LIMIT_WINDOW: `${WINDOW_SECONDS}s`
})

/** The script, from the wallets and keys of one server (keys differ between servers; answers never show them). */
const script = (
  w1: { address: string; key: string; privateKey: string },
  w2: { address: string; key: string },
  w3: { address: string; key: string },
  agentKey: string
): ReadonlyArray<Recorded> => {
  const key = (k: string) => ({ authorization: `Bearer ${k}` })
  const json = (value: unknown) => JSON.stringify(value)
  const signedBody = json({ user_id: w1.address, amount: 0.25 })
  return [
    {
      label: "buy",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 2 })
    },
    {
      label: "buy, with an Idempotency-Key",
      path: "/api/tokens/FAST/buy",
      headers: { ...key(w1.key), "idempotency-key": "order-1" },
      body: json({ user_id: w1.address, amount: 0.5 })
    },
    {
      label: "its retry: replayed",
      path: "/api/tokens/FAST/buy",
      headers: { ...key(w1.key), "idempotency-key": "order-1" },
      body: json({ user_id: w1.address, amount: 0.5 })
    },
    {
      label: "the same key for another amount",
      path: "/api/tokens/FAST/buy",
      headers: { ...key(w1.key), "idempotency-key": "order-1" },
      body: json({ user_id: w1.address, amount: 0.6 })
    },
    {
      label: "buy, money as written (17 digits)",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: `{"user_id":"${w1.address}","amount":0.10000000000000001,"min_tokens_out":1.5}`
    },
    {
      label: "buy, money as a decimal string (18 digits)",
      path: "/api/tokens/FAST/buy",
      headers: key(w2.key),
      body: `{"user_id":"${w2.address}","amount":"0.123456789","min_tokens_out":"1.000000000000000001"}`
    },
    {
      label: "buy, an amount written in 65 characters",
      path: "/api/tokens/FAST/buy",
      headers: key(w2.key),
      body: `{"user_id":"${w2.address}","amount":1.${"0".repeat(63)}}`
    },
    {
      label: "buy, a zero guard with a huge exponent",
      path: "/api/tokens/FAST/buy",
      headers: key(w2.key),
      body: `{"user_id":"${w2.address}","amount":0.01,"min_tokens_out":0e-999999999}`
    },
    {
      label: "buy, lower-case ticker, upper-case address",
      path: "/api/tokens/fast/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address.toUpperCase().replace("0X", "0x"), amount: 0.3 })
    },
    {
      label: "buy, fill or kill",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 0.2, fill_or_kill: true, min_tokens_out: 0 })
    },
    {
      label: "sell",
      path: "/api/tokens/FAST/sell",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 1000 })
    },
    {
      label: "sell, guard not met",
      path: "/api/tokens/FAST/sell",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 10, min_coin_out: 1000000 })
    },
    {
      label: "sell more than held",
      path: "/api/tokens/FAST/sell",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 100000000000 })
    },
    {
      label: "buy on the curve, too small",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 1e-12 })
    },
    {
      label: "unknown ticker",
      path: "/api/tokens/NOPE/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 1 })
    },
    {
      label: "more coin than the wallet has",
      path: "/api/tokens/FAST/buy",
      headers: key(w2.key),
      body: json({ user_id: w2.address, amount: 5000 })
    },
    {
      label: "another wallet's user_id",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w2.address, amount: 1 })
    },
    {
      label: "an agent's key",
      path: "/api/tokens/FAST/buy",
      headers: key(agentKey),
      body: json({ user_id: w1.address, amount: 1 })
    },
    { label: "no credentials", path: "/api/tokens/FAST/buy", body: json({ user_id: w1.address, amount: 1 }) },
    {
      label: "unknown key",
      path: "/api/tokens/FAST/buy",
      headers: key("kmk_unknownunknownunknown"),
      body: json({ user_id: w1.address, amount: 1 })
    },
    {
      label: "malformed Authorization",
      path: "/api/tokens/FAST/buy",
      headers: { authorization: "Basic abc" },
      body: json({ user_id: w1.address, amount: 1 })
    },
    { label: "not JSON", path: "/api/tokens/FAST/buy", headers: key(w1.key), body: `{"user_id": ` },
    { label: "no amount", path: "/api/tokens/FAST/buy", headers: key(w1.key), body: json({ user_id: w1.address }) },
    {
      label: "a buy with the sell side's guard (an unknown member)",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 0.1, min_coin_out: 1_000_000 })
    },
    {
      label: "a buy at another spelling of its path",
      path: "/api/tokens/FAST/buy/",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 0.1 })
    },
    {
      label: "negative amount",
      path: "/api/tokens/FAST/sell",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: -1 })
    },
    {
      label: "an empty Idempotency-Key",
      path: "/api/tokens/FAST/buy",
      headers: { ...key(w1.key), "idempotency-key": "" },
      body: json({ user_id: w1.address, amount: 1 })
    },
    {
      label: "a text/plain body",
      path: "/api/tokens/FAST/buy",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 0.1 }),
      contentType: "text/plain"
    },
    {
      label: "a query string",
      path: "/api/tokens/FAST/buy?via=script",
      headers: key(w1.key),
      body: json({ user_id: w1.address, amount: 0.1 })
    },
    {
      label: "a wallet signature",
      path: "/api/tokens/FAST/buy",
      headers: signRequest(w1.privateKey, { method: "POST", pathWithQuery: "/api/tokens/FAST/buy", body: signedBody }),
      body: signedBody
    },
    // The trading class's limit: the wallet's last two buys are over it.
    ...Array.from({ length: TRADING_LIMIT + 2 }, (_, i) => ({
      label: `burst buy ${i + 1}`,
      path: "/api/tokens/FAST/buy",
      headers: key(w3.key),
      body: json({ user_id: w3.address, amount: 0.01 })
    }))
  ]
}

const send = (port: number, request: Recorded) => {
  const body = request.body ?? ""
  const head = [
    `POST ${request.path} HTTP/1.1`,
    "host: 127.0.0.1",
    `content-type: ${request.contentType ?? "application/json"}`,
    `content-length: ${Buffer.byteLength(body)}`,
    ...Object.entries(request.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    "connection: close",
    "",
    ""
  ].join("\r\n")
  return rawRequest(port, head, [body])
}

/** One server's answers to the script, in order. */
const record = (fast: boolean) =>
  Effect.gen(function* () {
    const agentKey = yield* launchAgent("FAST")
    const w1 = yield* fundedWallet(401, "100")
    const w2 = yield* fundedWallet(402, "1")
    const w3 = yield* fundedWallet(403, "100")
    const port = yield* serverPort
    const answers: Array<RawResponse & { label: string }> = []
    for (const request of script(w1, w2, w3, agentKey))
      answers.push({ label: request.label, ...(yield* send(port, request)) })
    // A trade whose transaction fails (its table is gone): a defect, answered as a logged 500.
    const sql = yield* SqlClient.SqlClient
    yield* sql`ALTER TABLE market_trades RENAME TO market_trades_gone`.pipe(Effect.orDie)
    const failing = {
      label: "a trade whose transaction fails",
      path: "/api/tokens/FAST/buy",
      headers: { authorization: `Bearer ${w1.key}` },
      body: JSON.stringify({ user_id: w1.address, amount: 0.1 })
    }
    answers.push({ label: failing.label, ...(yield* send(port, failing)) })
    // The actor answered it and goes on (it is not restarted to replay the message): once the table is back,
    // the ticker trades again.
    yield* sql`ALTER TABLE market_trades_gone RENAME TO market_trades`.pipe(Effect.orDie)
    answers.push({ label: "the next trade, the table back", ...(yield* send(port, failing)) })
    return answers
  }).pipe(Effect.provide(HttpTest({ env: env(fast) })))

/**
 * What may differ between two servers: the clock (the date, the epoch second the rate limit resets at, and the
 * seconds a 429 asks to wait, which shrink by the time the burst took to send: at load 15 one server's burst took
 * a second longer than the other's). A Retry-After is still a whole number of seconds within the window.
 */
const comparable = ({ headers, ...answer }: RawResponse & { label: string }) => {
  const { date: _date, "x-ratelimit-reset": reset, "retry-after": retryAfter, ...rest } = headers
  const wait = retryAfter === undefined ? undefined : Number(retryAfter)
  const retryAfterValid = wait === undefined || (Number.isInteger(wait) && wait > 0 && wait <= WINDOW_SECONDS)
  return { ...answer, headers: rest, hasReset: reset !== undefined, hasRetryAfter: wait !== undefined, retryAfterValid }
}

describe("the trade fast path", () => {
  // Live clock: the wallet signature's timestamp is checked against it.
  it.live(
    "answers a recorded set of trades byte for byte as the HttpApi route does",
    () =>
      Effect.gen(function* () {
        const withFastPath = yield* record(true)
        const without = yield* record(false)
        assert.strictEqual(withFastPath.length, without.length)
        for (const [i, answer] of withFastPath.entries()) {
          assert.deepStrictEqual(comparable(answer), comparable(without[i]!), answer.label)
          // The reset is an epoch second, and the two servers ran one after the other (minutes apart on a loaded
          // machine): each answer's reset is compared with its own Date, within the next window.
          for (const one of [answer, without[i]!]) {
            if (one.headers["x-ratelimit-reset"] === undefined) continue
            const ahead = Number(one.headers["x-ratelimit-reset"]) - Date.parse(one.headers.date ?? "") / 1000
            assert.isTrue(
              ahead >= -1 && ahead <= WINDOW_SECONDS + 1,
              `${answer.label}: x-ratelimit-reset ${ahead} s ahead of Date`
            )
          }
        }
        // The script covers what it means to: successes, replays, refusals of every kind, the limit.
        const statuses = new Set(withFastPath.map((answer) => answer.status))
        for (const status of [200, 400, 401, 403, 404, 409, 422, 429, 500])
          assert.isTrue(statuses.has(status), `${status}`)
        const [failed, next] = withFastPath.slice(-2)
        assert.strictEqual(failed!.status, 500)
        assert.isDefined(failed!.headers["x-ratelimit-remaining"])
        assert.strictEqual(next!.status, 200)
        assert.strictEqual(withFastPath[2]!.headers["idempotent-replayed"], "true")
        assert.strictEqual(withFastPath.filter((answer) => answer.status === 429).length, 2)
      }),
    { timeout: 120_000 }
  )
})

const TRADE_PATH = "http://127.0.0.1/api/tokens/SIDE/buy"

/** Whether the fast path answered a trade itself or passed it on. */
const through = (init: { readonly headers: Record<string, string>; readonly body: string }, path = TRADE_PATH) =>
  Effect.flatMap(tradeFastPath, (fastPath) =>
    throughFastPath(
      fastPath,
      new Request(path, {
        method: "POST",
        headers: { "content-type": "application/json", ...init.headers },
        body: init.body
      })
    )
  )

layer(HttpTest({ env: env(true) }), { excludeTestServices: true, timeout: "60 seconds" })(
  "the fast path's reach",
  (it) => {
    it.effect("serves the common case itself and passes everything else on untouched", () =>
      Effect.gen(function* () {
        yield* launchAgent("SIDE")
        const w = yield* fundedWallet(404, "10")
        const bearer = { authorization: `Bearer ${w.key}` }
        const body = JSON.stringify({ user_id: w.address, amount: 0.1 })
        assert.deepStrictEqual(yield* through({ headers: bearer, body }), { passedOn: false, status: 200 })
        // A refusal after the request was counted is answered here too.
        assert.deepStrictEqual(
          yield* through({ headers: bearer, body: JSON.stringify({ user_id: w.address, amount: 9000 }) }),
          { passedOn: false, status: 422 }
        )
        for (const passed of [
          { headers: {}, body },
          { headers: bearer, body: "{" },
          { headers: bearer, body: JSON.stringify({ user_id: w.address }) },
          { headers: { authorization: "Bearer kmk_nobodynobodynobody" }, body },
          { headers: { ...bearer, "content-type": "text/plain" }, body }
        ])
          assert.deepStrictEqual(yield* through(passed), { passedOn: true, status: 599 })
        assert.deepStrictEqual(yield* through({ headers: bearer, body }, "http://127.0.0.1/api/tokens/SIDE/buy?x=1"), {
          passedOn: true,
          status: 599
        })
      })
    )
  }
)
