import { Config, ConfigError, Duration, Effect, Either } from "effect"
import { durationSetting } from "../platform/DurationSetting.js"
import type { MarketSettings } from "./TokenMarket.js"
import { toUnits } from "./Units.js"

const bps = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be between 0 and 10000 basis points", validation: (n) => n >= 0 && n <= 10_000 }),
    Config.withDefault(fallback)
  )

const perMinute = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a positive number of requests", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

const coin = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) => {
      try {
        const units = toUnits(text)
        return units >= 0n ? Either.right(units) : Either.left(invalid(name, text))
      } catch {
        return Either.left(invalid(name, text))
      }
    })
  )

const invalid = (name: string, text: string) =>
  ConfigError.InvalidData([name], `expected a non-negative decimal amount, got "${text}"`)

/** Settings of the agent marketplace (documented in docs/configuration.md and docs/marketplace.md). */
export class MarketConfig extends Effect.Service<MarketConfig>()("market/MarketConfig", {
  effect: Effect.gen(function* () {
    const feeBps = yield* bps("MARKET_FEE_BPS", 100)
    const agentShareBps = yield* bps("MARKET_AGENT_FEE_SHARE_BPS", 5_000)
    return {
      settings: { feeBps: BigInt(feeBps), agentShareBps: BigInt(agentShareBps) } satisfies MarketSettings,
      limits: {
        public: yield* perMinute("MARKET_RATE_LIMIT_PUBLIC", 100),
        authenticated: yield* perMinute("MARKET_RATE_LIMIT_AUTHENTICATED", 500),
        trading: yield* perMinute("MARKET_RATE_LIMIT_TRADING", 60)
      },
      /** The rate-limit window (one minute in production; tests may shorten it). */
      rateWindow: yield* durationSetting("MARKET_RATE_LIMIT_WINDOW").pipe(Config.withDefault(Duration.minutes(1))),
      /** Trades of at least this much coin get a `trade` line in the chat. */
      chatTradeMin: yield* coin("MARKET_CHAT_TRADE_MIN", "10"),
      /** How often agents' burn is charged (the amount follows elapsed time, not the tick). */
      burnInterval: yield* durationSetting("MARKET_BURN_INTERVAL").pipe(Config.withDefault(Duration.minutes(1))),
      /** How often the coin's price is recorded into its history. */
      priceSampleInterval: yield* durationSetting("MARKET_PRICE_SAMPLE_INTERVAL").pipe(
        Config.withDefault(Duration.minutes(1))
      ),
      /** The coin's price in the reference currency until an operator sets one. */
      initialCoinPrice: yield* coin("MARKET_COIN_INITIAL_PRICE", "1"),
      /**
       * Trades a ticker's actor holds (queued and in progress) before it answers 503 + Retry-After: a bound
       * on how long a caller can wait behind others instead of a queue that grows until clients time out.
       */
      tradeQueue: yield* Config.integer("MARKET_TRADE_QUEUE").pipe(
        Config.validate({ message: "must be a positive number of trades", validation: (n) => n > 0 }),
        Config.withDefault(256)
      ),
      /**
       * How long a trade waits for its ticker's actor before it is answered 503 TRADE_OUTCOME_UNKNOWN: the bound on
       * a caller's wait while the actor's runner is replaced (docs/cluster.md, "Failover").
       */
      tradeTimeout: yield* durationSetting("MARKET_TRADE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
      /** How far a signed request's timestamp may be from the server's clock. */
      signatureWindow: yield* durationSetting("MARKET_SIGNATURE_WINDOW").pipe(Config.withDefault(Duration.seconds(300)))
    } as const
  })
}) {}
