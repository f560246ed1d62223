import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Either } from "effect"
import { durationSetting, MarketConfig, parseDuration } from "../support/keel.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("duration settings", () => {
  it("read the compact forms ctl options take and Effect's forms alike", () => {
    assert.strictEqual(Duration.toMillis(parseDuration("1m")!), 60_000)
    assert.strictEqual(Duration.toMillis(parseDuration("300s")!), 300_000)
    assert.strictEqual(Duration.toMillis(parseDuration("500ms")!), 500)
    assert.strictEqual(Duration.toMillis(parseDuration("2h")!), 7_200_000)
    assert.strictEqual(Duration.toMillis(parseDuration("1d")!), 86_400_000)
    assert.strictEqual(Duration.toMillis(parseDuration("30 seconds")!), 30_000)
    assert.strictEqual(Duration.toMillis(parseDuration(" 5 minutes ")!), 300_000)
    assert.strictEqual(Duration.toMillis(parseDuration("36500d")!), 36_500 * 86_400_000)
    for (const bad of ["", "1", "-5 seconds", "-1m", "1 fortnight", "Infinity", "1.5m", "m", "36501d", "99999999d"]) {
      assert.isUndefined(parseDuration(bad), bad)
    }
  })

  it.effect("the marketplace's documented defaults, written as documented, are accepted", () =>
    Effect.gen(function* () {
      const config = yield* MarketConfig.pipe(
        Effect.provide(MarketConfig.Default),
        withEnv({
          MARKET_RATE_LIMIT_WINDOW: "1m",
          MARKET_BURN_INTERVAL: "1m",
          MARKET_PRICE_SAMPLE_INTERVAL: "1m",
          MARKET_SIGNATURE_WINDOW: "300s"
        })
      )
      assert.strictEqual(Duration.toMillis(config.rateWindow), 60_000)
      assert.strictEqual(Duration.toMillis(config.burnInterval), 60_000)
      assert.strictEqual(Duration.toMillis(config.signatureWindow), 300_000)
    })
  )

  it.effect("a bad one names the setting and the forms it takes", () =>
    Effect.gen(function* () {
      const result = yield* Effect.either(durationSetting("KEEL_JOB_LEASE").pipe(withEnv({ KEEL_JOB_LEASE: "soon" })))
      assert.isTrue(Either.isLeft(result))
      const message = String(Either.isLeft(result) ? result.left : "")
      assert.include(message, "KEEL_JOB_LEASE")
      assert.include(message, 'expected a duration such as 30s, 5m, 2h or "30 seconds", at most 36500d (got "soon")')
    })
  )
})
