import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { COIN, exactIntegers, ISSUANCE, Ledger } from "./Ledger.js"
import { MarketConfig } from "./MarketConfig.js"
import { fromUnits, UNIT } from "./Units.js"

/**
 * Where the coin's price in the reference currency comes from. Live: the price an operator set
 * (`ctl market coin set-price`); an exchange feed would be another adapter behind the same port.
 */
export class CoinPriceSource extends Context.Tag("market/CoinPriceSource")<
  CoinPriceSource,
  {
    /** Nano-units of the reference currency per coin. */
    readonly current: Effect.Effect<bigint>
    readonly set: (price: bigint) => Effect.Effect<void>
  }
>() {
  /** The operator-set price, kept as points of the price history; the configured default until one is set. */
  static readonly AdminSet = Layer.effect(
    CoinPriceSource,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const config = yield* MarketConfig
      return {
        current: exactIntegers(
          sql<{ price: bigint }>`SELECT price FROM market_coin_prices WHERE source IN ('admin', 'demo')
            ORDER BY at DESC, rowid DESC LIMIT 1`
        ).pipe(
          Effect.map((rows) => (rows[0] === undefined ? config.initialCoinPrice : BigInt(rows[0].price))),
          Effect.orDie
        ),
        set: (price) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            yield* sql`INSERT INTO market_coin_prices (at, price, source) VALUES (${now}, ${price}, 'admin')`
          }).pipe(Effect.orDie)
      }
    })
  )
}

export const Periods = {
  "1h": 3_600_000,
  "24h": 86_400_000,
  "7d": 7 * 86_400_000,
  "30d": 30 * 86_400_000,
  all: Number.POSITIVE_INFINITY
} as const
export type Period = keyof typeof Periods

export interface PricePoint {
  readonly price: number
  readonly timestamp: string
}

export interface CoinHistoryReport {
  readonly current: { readonly price: number; readonly supply: number; readonly market_cap: number }
  readonly price_change_percent: number
  readonly history: ReadonlyArray<PricePoint>
}

/** `limit` points spread evenly over the rows (first and last kept), in time order. */
export const downSample = <A>(rows: ReadonlyArray<A>, limit: number): ReadonlyArray<A> => {
  if (rows.length <= limit) return rows
  if (limit === 1) return [rows[rows.length - 1]!]
  const step = (rows.length - 1) / (limit - 1)
  return Array.from({ length: limit }, (_, i) => rows[Math.round(i * step)]!)
}

const round = (value: number, digits: number) => Number(value.toFixed(digits))

/** The coin's price history and supply: sampled on a schedule, answered down-sampled per period. */
export class CoinHistory extends Effect.Service<CoinHistory>()("market/CoinHistory", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const source = yield* CoinPriceSource
    const ledger = yield* Ledger

    /** Records the current price as a history point (what the per-minute sampler does). */
    const sample = Effect.gen(function* () {
      const price = yield* source.current
      const now = yield* Clock.currentTimeMillis
      yield* sql`INSERT INTO market_coin_prices (at, price, source) VALUES (${now}, ${price}, 'sample')`.pipe(
        Effect.orDie
      )
    })

    const report = Effect.fn("CoinHistory.report")(function* (period: Period, limit: number) {
      const now = yield* Clock.currentTimeMillis
      const span = Periods[period]
      const from = Number.isFinite(span) ? now - span : 0
      const rows = yield* exactIntegers(
        sql<{ at: number; price: bigint }>`SELECT at, price FROM market_coin_prices WHERE at >= ${from} AND at <= ${now}
          ORDER BY at, rowid`
      ).pipe(Effect.orDie)
      const price = yield* source.current
      const supply = -(yield* ledger.balance(ISSUANCE, COIN))
      const first = rows[0] === undefined ? price : BigInt(rows[0].price)
      const change = first === 0n ? 0 : (Number(price - first) / Number(first)) * 100
      return {
        current: {
          price: fromUnits(price),
          supply: fromUnits(supply),
          // price × supply in nano × nano: divide once to stay exact before turning into a number.
          market_cap: fromUnits((price * supply) / UNIT)
        },
        price_change_percent: round(change, 4),
        history: downSample(rows, limit).map((row) => ({
          price: fromUnits(BigInt(row.price)),
          timestamp: new Date(Number(row.at)).toISOString()
        }))
      } satisfies CoinHistoryReport
    })

    return { sample, report, setPrice: source.set, currentPrice: source.current } as const
  })
}) {}
