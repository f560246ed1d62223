import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RateLimits } from "../support/keel.js"

const MINUTE = 60_000

describe("RateLimits (docs/marketplace.md, Rate limits)", () => {
  it.effect("a window opens at the first request; each request adds 1/limit of it to the counter's life", () =>
    Effect.gen(function* () {
      const limits = yield* RateLimits
      const take = (at: number) => limits.consumeAt("trading:wallet:0xa", 3, MINUTE, at)
      assert.deepStrictEqual(take(1_000), { allowed: true, remaining: 2, resetAfterMillis: 20_000 })
      assert.deepStrictEqual(take(1_000), { allowed: true, remaining: 1, resetAfterMillis: 40_000 })
      assert.deepStrictEqual(take(2_000), { allowed: true, remaining: 0, resetAfterMillis: 59_000 })
      // Over the limit: nothing is counted, and the answer says when the counter expires.
      assert.deepStrictEqual(take(2_000), { allowed: false, retryAfterMillis: 59_000 })
      assert.deepStrictEqual(take(31_000), { allowed: false, retryAfterMillis: 30_000 })
      // Once it has expired, a new window opens.
      assert.deepStrictEqual(take(61_000), { allowed: true, remaining: 2, resetAfterMillis: 20_000 })
      // Other keys have counters of their own.
      assert.deepStrictEqual(limits.consumeAt("trading:wallet:0xb", 3, MINUTE, 61_000), {
        allowed: true,
        remaining: 2,
        resetAfterMillis: 20_000
      })
    }).pipe(Effect.provide(RateLimits.Default))
  )

  it.effect("forgets expired counters once it holds many, so clients coming and going cannot grow it", () =>
    Effect.gen(function* () {
      const limits = yield* RateLimits
      for (let i = 0; i < 9_999; i++) limits.consumeAt(`public:ip:10.0.${i >> 8}.${i & 255}`, 100, MINUTE, 0)
      // Still live when the sweep comes: kept.
      limits.consumeAt("public:ip:192.0.2.1", 100, MINUTE, 500)
      assert.strictEqual(limits.size(), 10_000)
      // Every counter but that one has expired by now (each lived 600 ms).
      limits.consumeAt("public:ip:192.0.2.2", 100, MINUTE, 700)
      assert.strictEqual(limits.size(), 2)
    }).pipe(Effect.provide(RateLimits.Default))
  )

  it.effect("with many live counters, new clients do not each pay for a sweep", () =>
    Effect.gen(function* () {
      const limits = yield* RateLimits
      for (let i = 0; i < 10_000; i++) limits.consumeAt(`public:ip:10.1.${i >> 8}.${i & 255}`, 100, MINUTE, 0)
      // All live: the first new client sweeps and finds nothing to forget; the next ones do not sweep again
      // until there are twice as many counters.
      for (let i = 0; i < 1_000; i++) limits.consumeAt(`public:ip:10.2.${i >> 8}.${i & 255}`, 100, MINUTE, 100)
      assert.strictEqual(limits.sweeps(), 1)
      assert.strictEqual(limits.size(), 11_000)
    }).pipe(Effect.provide(RateLimits.Default))
  )
})
