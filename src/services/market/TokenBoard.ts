import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { COIN, exactIntegers } from "./Ledger.js"
import { priceNumber } from "./Trading.js"
import { fromUnits } from "./Units.js"

export interface TokenSummary {
  readonly ticker: string
  readonly name: string
  /** The curve's marginal price now, in coin per token. */
  readonly price: number
  /** Percent change of the marginal price over the last 24 h. */
  readonly price_change_24h: number
  /** price × circulating supply, in coin. */
  readonly market_cap: number
  /** Coin traded over the last 24 h. */
  readonly volume_24h: number
}

type Int = bigint | number

const DAY_MILLIS = 86_400_000

/**
 * The token list: marginal price, market cap, 24 h volume and change, computed from the curves,
 * the ledger and the trade journal in four queries however many tokens there are.
 */
export class TokenBoard extends Effect.Service<TokenBoard>()("market/TokenBoard", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const summaries = Effect.fn("TokenBoard.summaries")(
      function* (page: { limit: number; offset: number }) {
        const since = (yield* Clock.currentTimeMillis) - DAY_MILLIS
        const curves = yield* sql<{ ticker: string; name: string | null; virtual_coin: Int; virtual_token: Int }>`
          SELECT c.ticker, a.name, c.virtual_coin, c.virtual_token FROM market_curves c
          LEFT JOIN market_agents a ON a.ticker = c.ticker`
        const reserves = yield* sql<{ account: string; asset: string; balance: Int }>`
          SELECT account, asset, balance FROM ledger_balances WHERE account LIKE 'curve:%'`
        const held = yield* sql<{ asset: string; held: Int }>`
          SELECT asset, sum(balance) AS held FROM ledger_balances
          WHERE asset <> ${COIN} AND account NOT LIKE 'system:%' AND account NOT LIKE 'curve:%' GROUP BY asset`
        const volumes = yield* sql<{ ticker: string; volume: Int }>`
          SELECT ticker, sum(coin) AS volume FROM market_trades WHERE created_at >= ${since} GROUP BY ticker`
        const dayAgo = yield* sql<{ ticker: string; virtual_coin_after: Int; virtual_token_after: Int }>`
          SELECT t.ticker, t.virtual_coin_after, t.virtual_token_after FROM market_trades t
          JOIN (SELECT max(id) AS id FROM market_trades WHERE created_at < ${since} GROUP BY ticker) m ON m.id = t.id`

        const reserve = new Map(reserves.map((r) => [`${r.account}/${r.asset}`, BigInt(r.balance)]))
        const circulating = new Map(held.map((r) => [r.asset, BigInt(r.held)]))
        const volume = new Map(volumes.map((r) => [r.ticker, BigInt(r.volume)]))
        const before = new Map(
          dayAgo.map((r) => [r.ticker, priceNumber(BigInt(r.virtual_coin_after), BigInt(r.virtual_token_after))])
        )
        const tokens = curves.map((curve) => {
          const vCoin = BigInt(curve.virtual_coin)
          const vToken = BigInt(curve.virtual_token)
          const supply = circulating.get(curve.ticker) ?? 0n
          const price = priceNumber(vCoin, vToken)
          // Without a trade older than a day, the price a day ago was the launch price, which the
          // reserves still tell: every coin and token that moved did so through the curve.
          const launchPrice = priceNumber(vCoin - (reserve.get(`curve:${curve.ticker}/${COIN}`) ?? 0n), vToken + supply)
          const then = before.get(curve.ticker) ?? launchPrice
          return {
            ticker: curve.ticker,
            name: curve.name ?? curve.ticker,
            price,
            price_change_24h: then === 0 ? 0 : Number((((price - then) / then) * 100).toFixed(4)),
            market_cap: fromUnits((vCoin * supply) / vToken),
            volume_24h: fromUnits(volume.get(curve.ticker) ?? 0n)
          } satisfies TokenSummary
        })
        tokens.sort((a, b) => b.market_cap - a.market_cap || (a.ticker < b.ticker ? -1 : 1))
        return tokens.slice(page.offset, page.offset + page.limit)
      },
      Effect.orDie,
      exactIntegers
    )

    return { summaries } as const
  })
}) {}
