import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { InvalidInput } from "../../contracts/market/Errors.js"
import { COIN, exactIntegers } from "./Ledger.js"
import { pageOf } from "./Paging.js"
import { priceNumber } from "./Trading.js"
import { fromUnits, ratioText, unitsText } from "./Units.js"

export interface TokenSummary {
  readonly ticker: string
  readonly name: string
  /** The curve's marginal price now, in coin per token. */
  readonly price: number
  /** The same to 18 significant digits, as decimal text. */
  readonly price_str: string
  /** Percent change of the marginal price over the last 24 h. */
  readonly price_change_24h: number
  /** price × circulating supply, in coin. */
  readonly market_cap: number
  readonly market_cap_str: string
  /** Coin traded over the last 24 h. */
  readonly volume_24h: number
  readonly volume_24h_str: string
}

type Int = bigint | number

/**
 * Where the next page of the token list starts: after this token in (market cap desc, ticker)
 * order. The cap is in nano-units, exact. Market caps move with every trade, so a token whose cap
 * crosses the cursor between two pages shows on both or on neither, as on any ranking that moves.
 */
export interface TokenCursor {
  readonly market_cap_units: bigint
  readonly ticker: string
}

const DAY_MILLIS = 86_400_000

/**
 * The token list: marginal price, market cap, 24 h volume and change, computed from the curves,
 * the ledger and the trade journal in four queries however many tokens there are.
 */
export class TokenBoard extends Effect.Service<TokenBoard>()("market/TokenBoard", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const board = Effect.fn("TokenBoard.board")(
      function* () {
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
          const capUnits = (vCoin * supply) / vToken
          const traded = volume.get(curve.ticker) ?? 0n
          return {
            capUnits,
            ticker: curve.ticker,
            name: curve.name ?? curve.ticker,
            price,
            price_str: ratioText(vCoin, vToken),
            price_change_24h: then === 0 ? 0 : Number((((price - then) / then) * 100).toFixed(4)),
            market_cap: fromUnits(capUnits),
            market_cap_str: unitsText(capUnits),
            volume_24h: fromUnits(traded),
            volume_24h_str: unitsText(traded)
          }
        })
        tokens.sort((a, b) =>
          a.capUnits === b.capUnits ? (a.ticker < b.ticker ? -1 : 1) : a.capUnits > b.capUnits ? -1 : 1
        )
        return tokens
      },
      Effect.orDie,
      exactIntegers
    )

    const isAfter = (token: { capUnits: bigint; ticker: string }, cursor: TokenCursor) =>
      token.capUnits < cursor.market_cap_units ||
      (token.capUnits === cursor.market_cap_units && token.ticker > cursor.ticker)

    /** Tokens by market cap, largest first (ties by ticker), `limit` at a time, after a cursor or from an offset. */
    const page = Effect.fn("TokenBoard.page")(function* (options: {
      readonly limit: number
      readonly offset?: number | undefined
      readonly after?: TokenCursor | undefined
    }) {
      const { after, limit, offset } = options
      if (after !== undefined && offset !== undefined)
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: "use either cursor or offset, not both" })
      const tokens = yield* board()
      const start = after === undefined ? (offset ?? 0) : tokens.findIndex((token) => isAfter(token, after))
      const rows = start < 0 ? [] : tokens.slice(start, start + limit + 1)
      const result = pageOf(
        rows,
        limit,
        (last): TokenCursor => ({ market_cap_units: last.capUnits, ticker: last.ticker })
      )
      return { items: result.items.map(({ capUnits: _, ...summary }): TokenSummary => summary), next: result.next }
    })

    const summaries = (options: { limit: number; offset: number }) =>
      page(options).pipe(
        Effect.map((p) => p.items),
        Effect.catchTag("InvalidInput", Effect.die)
      )

    return { summaries, page } as const
  })
}) {}
