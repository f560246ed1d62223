import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Logger } from "effect"
import { Redis } from "ioredis"
import { RateLimits } from "../../src/services/market/RateLimits.js"
import { HttpTest } from "../support/http.js"
import { call, fundedWallet, launchAgent } from "../support/market.js"
import { type TcpProxy, tcpProxy } from "../support/tcp-proxy.js"

/** The machine's Redis (CI has the same): the one these tests share counters through. */
const REDIS = { host: "127.0.0.1", port: 6379 }
const MINUTE = 60_000

/** A RateLimits as one process would build it from its environment. */
const rateLimitsWith = (env: Record<string, string>) =>
  RateLimits.Default.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))

const prefix = () => `keel-test:${randomBytes(6).toString("hex")}:`

/** What the service logged, for the outage's two lines. */
const capturedLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message }) => {
      lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    })
  )
  return { lines, logger }
}

describe("rate limits shared through Redis (docs/marketplace.md, Rate limits)", () => {
  it.scopedLive("two processes' counters are one: a limit of 10 allows 10 of 30 requests alternated between them", () =>
    Effect.gen(function* () {
      const env = { KEEL_REDIS_URL: `redis://${REDIS.host}:${REDIS.port}`, KEEL_REDIS_PREFIX: prefix() }
      const first = yield* Layer.build(rateLimitsWith(env)).pipe(Effect.map(Context.get(RateLimits)))
      const second = yield* Layer.build(rateLimitsWith(env)).pipe(Effect.map(Context.get(RateLimits)))
      assert.isTrue(first.shared && second.shared)
      const outcomes = []
      for (let i = 0; i < 30; i++)
        outcomes.push(
          (yield* (i % 2 === 0 ? first : second).consume("public", "public:ip:192.0.2.7", 10, MINUTE)).outcome
        )
      const allowed = outcomes.filter((outcome) => outcome.allowed)
      assert.strictEqual(allowed.length, 10)
      // The same counter seen from both: remaining goes 9, 8, … 0 whichever process counted.
      assert.deepStrictEqual(
        allowed.map((outcome) => (outcome.allowed ? outcome.remaining : -1)),
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
      )
      // The window's semantics are LocalCounters': each request adds window/limit to the counter's life.
      const last = allowed[9]!
      assert.isTrue(last.allowed && last.resetAfterMillis > 50_000 && last.resetAfterMillis <= MINUTE)
      for (const refused of outcomes.slice(10)) {
        assert.isFalse(refused.allowed)
        assert.isFalse("unavailable" in refused)
      }
    })
  )

  it.scopedLive(
    "Redis failing: fail-closed classes are unavailable, the others counted here; one log line each way",
    () =>
      Effect.gen(function* () {
        const proxy = yield* tcpProxy(REDIS)
        const logs = capturedLogs()
        const limits = yield* Layer.build(
          rateLimitsWith({
            KEEL_REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
            KEEL_REDIS_PREFIX: prefix(),
            KEEL_RATE_LIMIT_FAIL_CLOSED: "trading,authenticated"
          }).pipe(Layer.provide(logs.logger))
        ).pipe(Effect.map(Context.get(RateLimits)))
        proxy.down()
        const consume = (cls: "public" | "authenticated" | "trading") =>
          limits.consume(cls, `${cls}:wallet:0xabc`, 2, MINUTE).pipe(Effect.provide(logs.logger))
        for (let i = 0; i < 3; i++) {
          const trading = (yield* consume("trading")).outcome
          assert.deepStrictEqual(trading, { allowed: false, unavailable: true, retryAfterMillis: 2_000 })
          assert.isTrue("unavailable" in (yield* consume("authenticated")).outcome)
        }
        // Fail-open: this process's own counters, with their limit.
        const publics = [yield* consume("public"), yield* consume("public"), yield* consume("public")]
        assert.deepStrictEqual(
          publics.map(({ outcome }) => outcome.allowed),
          [true, true, false]
        )
        const outage = logs.lines.filter((line) => line.includes("Redis"))
        assert.strictEqual(outage.length, 1, outage.join("\n"))
        assert.match(
          outage[0]!,
          /^WARN rate limits: Redis failing \(.+\); public counted by this process, authenticated refused, trading refused$/
        )

        proxy.up()
        // The client reconnects on its own (200 ms to 2 s apart): wait for it, bounded.
        let back = false
        for (let tries = 0; tries < 300 && !back; tries++) {
          back = (yield* consume("trading")).outcome.allowed
          if (!back) yield* Effect.sleep("100 millis")
        }
        assert.isTrue(back, "counting through Redis again after it came back")
        assert.strictEqual(logs.lines.filter((line) => line.includes("Redis reachable again")).length, 1)
      })
  )

  it.scopedLive("the Redis URL's password appears in no log line", () =>
    Effect.gen(function* () {
      const logs = capturedLogs()
      // Nothing listens on port 1: the start logs that Redis is not reachable, and must not print the URL.
      const limits = yield* Layer.build(
        rateLimitsWith({ KEEL_REDIS_URL: "redis://keel:hunter2-secret@127.0.0.1:1", KEEL_REDIS_PREFIX: prefix() }).pipe(
          Layer.provide(logs.logger)
        )
      ).pipe(Effect.map(Context.get(RateLimits)))
      yield* limits.consume("trading", "trading:wallet:0x1", 2, MINUTE).pipe(Effect.provide(logs.logger))
      assert.isAbove(logs.lines.length, 0)
      for (const line of logs.lines) assert.notInclude(line, "hunter2")
    })
  )
})

// Through the HTTP surface: a server whose Redis is behind a proxy the test cuts.
class RedisProxy extends Context.Tag("test/RedisProxy")<RedisProxy, TcpProxy>() {}

const ServerWithRedis = Layer.unwrapScoped(
  Effect.map(tcpProxy(REDIS), (proxy) =>
    Layer.merge(
      HttpTest({
        env: { KEEL_REDIS_URL: `redis://127.0.0.1:${proxy.port}`, KEEL_REDIS_PREFIX: prefix() }
      }),
      Layer.succeed(RedisProxy, proxy)
    )
  )
)

layer(ServerWithRedis, { timeout: "60 seconds", excludeTestServices: true })("the gate with Redis failing", (it) => {
  it.effect("a trade is 503 RATE_LIMIT_UNAVAILABLE with Retry-After and not made; reads still answer", () =>
    Effect.gen(function* () {
      const proxy = yield* RedisProxy
      yield* launchAgent("REDIS")
      const w = yield* fundedWallet(50)
      const order = { bearer: w.key, body: { user_id: w.address, amount: 0.01 } }
      assert.strictEqual((yield* call("POST", "/api/tokens/REDIS/buy", order)).status, 200)

      proxy.down()
      const refused = yield* call("POST", "/api/tokens/REDIS/buy", order)
      assert.strictEqual(refused.status, 503)
      assert.strictEqual(refused.body.code, "RATE_LIMIT_UNAVAILABLE")
      assert.strictEqual(refused.body.status, 503)
      assert.strictEqual(refused.headers["retry-after"], "2")
      const balance = yield* call("GET", `/api/coin/balance?user_id=${w.address}`, { bearer: w.key })
      assert.strictEqual(balance.status, 200)
      assert.strictEqual(balance.headers["x-ratelimit-limit"], "500")
      const tokens = yield* call("GET", "/api/tokens")
      assert.strictEqual(tokens.status, 200)

      proxy.up()
      let status = 0
      for (let tries = 0; tries < 300 && status !== 200; tries++) {
        status = (yield* call("POST", "/api/tokens/REDIS/buy", order)).status
        if (status !== 200) yield* Effect.sleep("100 millis")
      }
      assert.strictEqual(status, 200)
      // Two trades made in all: the refused one was not.
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM market_trades WHERE ticker = 'REDIS'`
      assert.strictEqual(Number(row!.n), 2)
    })
  )
})

// Keep ioredis's own import honest: the counters' keys carry the prefix (what lets several Keels share one Redis).
describe("keys", () => {
  it.scopedLive("a count leaves one key under the configured prefix", () =>
    Effect.gen(function* () {
      const keyPrefix = prefix()
      const limits = yield* Layer.build(
        rateLimitsWith({ KEEL_REDIS_URL: `redis://${REDIS.host}:${REDIS.port}`, KEEL_REDIS_PREFIX: keyPrefix })
      ).pipe(Effect.map(Context.get(RateLimits)))
      yield* limits.consume("public", "public:ip:192.0.2.9", 5, MINUTE)
      const redis = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(REDIS.port, REDIS.host)),
        (client) => Effect.sync(() => client.disconnect())
      )
      const keys = yield* Effect.promise(() => redis.keys(`${keyPrefix}*`))
      assert.deepStrictEqual(keys, [`${keyPrefix}public:ip:192.0.2.9`])
      const ttl = yield* Effect.promise(() => redis.pttl(keys[0]!))
      assert.isTrue(ttl > 0 && ttl <= 12_000)
    })
  )
})
