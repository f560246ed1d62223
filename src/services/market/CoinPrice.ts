import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { InvalidInput } from "../../contracts/market/Errors.js"
import { COIN, exactIntegers, ISSUANCE, Ledger } from "./Ledger.js"
import { MarketConfig } from "./MarketConfig.js"
import { pageOf } from "./Paging.js"
import { fromUnits, MAX_LEG, UNIT, unitsText } from "./Units.js"

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
            ORDER BY at DESC, id DESC LIMIT 1`
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
  /** The same, exactly, as decimal text (every amount has its `_str`: docs/marketplace.md). */
  readonly price_str: string
  readonly timestamp: string
}

export interface CoinHistoryReport {
  readonly current: {
    readonly price: number
    readonly price_str: string
    readonly supply: number
    readonly supply_str: string
    readonly market_cap: number
    readonly market_cap_str: string
  }
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

/** How a history answer picks its points: spread over the period, or every point, paged. */
export type Sampling = "even" | "none"

/** Where the next page of a full-resolution history starts: after this point (time, then insertion order). */
export interface CoinHistoryCursor {
  readonly at: number
  readonly seq: number
}

interface PriceRow {
  readonly seq: bigint | number
  readonly at: bigint | number
  readonly price: bigint | number
}

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

    const summary = (period: Period) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const span = Periods[period]
        const from = Number.isFinite(span) ? now - span : 0
        const price = yield* source.current
        const supply = -(yield* ledger.balance(ISSUANCE, COIN))
        return { now, from, price, supply }
      })

    const reportOf = (
      head: { price: bigint; supply: bigint },
      firstOfPeriod: PriceRow | undefined,
      points: ReadonlyArray<PriceRow>
    ): CoinHistoryReport => {
      const first = firstOfPeriod === undefined ? head.price : BigInt(firstOfPeriod.price)
      const change = first === 0n ? 0 : (Number(head.price - first) / Number(first)) * 100
      const marketCap = (head.price * head.supply) / UNIT
      return {
        current: {
          price: fromUnits(head.price),
          price_str: unitsText(head.price),
          supply: fromUnits(head.supply),
          supply_str: unitsText(head.supply),
          // price × supply in nano × nano: divide once to stay exact before turning into a number.
          market_cap: fromUnits(marketCap),
          market_cap_str: unitsText(marketCap)
        },
        price_change_percent: round(change, 4),
        history: points.map((row) => ({
          price: fromUnits(BigInt(row.price)),
          price_str: unitsText(BigInt(row.price)),
          timestamp: new Date(Number(row.at)).toISOString()
        }))
      }
    }

    /**
     * The period's history. `sampling: "even"` (the default): every point of the period evenly
     * down-sampled to `limit` (first and last kept), a complete answer with no next page.
     * `sampling: "none"`: the points themselves in time order, `limit` at a time, after a cursor.
     */
    const page = Effect.fn("CoinHistory.page")(function* (options: {
      readonly period: Period
      readonly limit: number
      readonly sampling?: Sampling | undefined
      readonly after?: CoinHistoryCursor | undefined
    }) {
      const { after, limit, period } = options
      const sampling = options.sampling ?? "even"
      if (after !== undefined && sampling !== "none")
        return yield* new InvalidInput({
          code: "INVALID_INPUT",
          detail: "a cursor pages the history point by point: it goes with sampling=none"
        })
      const head = yield* summary(period)
      if (sampling === "even") {
        const rows = yield* exactIntegers(
          sql<PriceRow>`SELECT id AS seq, at, price FROM market_coin_prices
            WHERE at >= ${head.from} AND at <= ${head.now} ORDER BY at, id`
        ).pipe(Effect.orDie)
        return { report: reportOf(head, rows[0], downSample(rows, limit)), next: undefined }
      }
      const first = yield* exactIntegers(
        sql<PriceRow>`SELECT id AS seq, at, price FROM market_coin_prices
          WHERE at >= ${head.from} AND at <= ${head.now} ORDER BY at, id LIMIT 1`
      ).pipe(Effect.orDie)
      const rows = yield* exactIntegers(
        after === undefined
          ? sql<PriceRow>`SELECT id AS seq, at, price FROM market_coin_prices
              WHERE at >= ${head.from} AND at <= ${head.now} ORDER BY at, id LIMIT ${limit + 1}`
          : sql<PriceRow>`SELECT id AS seq, at, price FROM market_coin_prices
              WHERE at >= ${head.from} AND at <= ${head.now}
                AND (at > ${after.at} OR (at = ${after.at} AND id > ${after.seq}))
              ORDER BY at, id LIMIT ${limit + 1}`
      ).pipe(Effect.orDie)
      const result = pageOf(rows, limit, (last): CoinHistoryCursor => ({ at: Number(last.at), seq: Number(last.seq) }))
      return { report: reportOf(head, first[0], result.items), next: result.next }
    })

    const report = (period: Period, limit: number) =>
      page({ period, limit }).pipe(
        Effect.map((p) => p.report),
        Effect.catchTag("InvalidInput", Effect.die)
      )

    /** Nano-units of the reference currency per coin: more than 0, at most the ledger's largest amount. */
    const setPrice = (price: bigint): Effect.Effect<void, InvalidInput> =>
      price <= 0n || price > MAX_LEG
        ? Effect.fail(
            new InvalidInput({
              code: "INVALID_INPUT",
              detail: `the coin's price must be more than 0 and at most ${unitsText(MAX_LEG)}`
            })
          )
        : source.set(price)

    return { sample, report, page, setPrice, currentPrice: source.current } as const
  })
}) {}
