import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { fromUnits, Ledger } from "../support/keel.js"
import { type Answer, call, fundedWallet, launchAgent } from "../support/market.js"

interface TradeRow {
  readonly wallet: string
  readonly side: string
  readonly tokens: bigint
  readonly fee: bigint
}

/** `wallet|side|tokens|fee`: one line per trade, comparable between answers and journal rows. */
const fromAnswer = (wallet: string, side: "buy" | "sell", amount: number, answer: Answer) =>
  `${wallet.toLowerCase()}|${side}|${side === "buy" ? answer.body.tokens_received : amount}|${answer.body.fee}`

const fromRow = (row: TradeRow) =>
  `${row.wallet.replace("wallet:", "")}|${row.side}|${fromUnits(BigInt(row.tokens))}|${fromUnits(BigInt(row.fee))}`

const journal = (tickers: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows =
      yield* sql<TradeRow>`SELECT wallet, side, tokens, fee FROM market_trades WHERE ${sql.in("ticker", tickers)}`
    return rows.map(fromRow).sort()
  }).pipe(Effect.orDie)

/**
 * 20 wallets, each buying once, then 200 buys and sells at once: every 200 answer must be a
 * journal row and every row an answer, and the ledger must still balance.
 */
const storm = (tickers: ReadonlyArray<string>, firstWallet: number) =>
  Effect.gen(function* () {
    const wallets = yield* Effect.forEach(
      Array.from({ length: 20 }, (_, i) => firstWallet + i),
      (n) => fundedWallet(n, "500")
    )
    const answered: Array<string> = []
    const trade = (ticker: string, w: (typeof wallets)[number], side: "buy" | "sell", amount: number) =>
      Effect.map(
        call("POST", `/api/tokens/${ticker}/${side}`, { bearer: w.key, body: { user_id: w.address, amount } }),
        (answer) => {
          if (answer.status === 200) answered.push(fromAnswer(w.address, side, amount, answer))
          return answer
        }
      )
    // Each wallet opens a position on every ticker, so that sells have something to sell.
    yield* Effect.forEach(wallets, (w) => Effect.forEach(tickers, (t) => trade(t, w, "buy", 1)), {
      concurrency: "unbounded"
    })
    const answers = yield* Effect.forEach(
      tickers.flatMap((ticker) =>
        Array.from({ length: 200 }, (_, i) => ({
          ticker,
          wallet: wallets[i % wallets.length]!,
          side: i % 3 === 0 ? ("sell" as const) : ("buy" as const),
          // Small enough that the curve (about 85 coin to complete) never sells out mid-test.
          amount: i % 3 === 0 ? 100 : 0.05 + (i % 7) / 100
        }))
      ),
      (order) => trade(order.ticker, order.wallet, order.side, order.amount),
      { concurrency: "unbounded" }
    )
    const statuses = new Set(answers.map((a) => a.status))
    return { answered: answered.sort(), statuses, ok: answers.filter((a) => a.status === 200).length }
  })

// Rate limits have their own test; here each wallet sends up to 55 trades within the minute.
layer(HttpTest({ env: { MARKET_RATE_LIMIT_TRADING: "1000" } }), { timeout: "120 seconds", excludeTestServices: true })(
  "concurrent trading through HTTP",
  (it) => {
    it.effect("200 concurrent buys and sells on one ticker from 20 wallets keep the invariant; answers = journal", () =>
      Effect.gen(function* () {
        yield* launchAgent("HOT")
        const result = yield* storm(["HOT"], 100)
        assert.deepStrictEqual([...result.statuses], [200])
        assert.strictEqual(result.ok, 200)
        assert.deepStrictEqual(result.answered, yield* journal(["HOT"]))
        const audit = yield* (yield* Ledger).audit()
        assert.deepStrictEqual(audit.problems, [])
      })
    )

    it.effect("the same on 5 tickers at once", () =>
      Effect.gen(function* () {
        const tickers = ["PAR1", "PAR2", "PAR3", "PAR4", "PAR5"]
        for (const ticker of tickers) yield* launchAgent(ticker)
        const result = yield* storm(tickers, 200)
        assert.deepStrictEqual([...result.statuses], [200])
        assert.strictEqual(result.ok, 1000)
        assert.deepStrictEqual(result.answered, yield* journal(tickers))
        const audit = yield* (yield* Ledger).audit()
        assert.deepStrictEqual(audit.problems, [])
      })
    )
  }
)
