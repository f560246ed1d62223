import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { marketMigrations } from "../../src/services/market/migrations.js"
import { migrationsLayer, withDialect } from "../../src/services/platform/Database.js"
import {
  COIN,
  curveAccount,
  defaultLaunch,
  Ledger,
  MarketConfig,
  MarketEvents,
  Shutdown,
  SqlDirect,
  savepoint,
  TokenMarket,
  TREASURY,
  type TradeOrder,
  Trading,
  toUnits,
  walletAccount
} from "../support/keel.js"
import { pgInFreshSchema, postgresSkipReason } from "../support/pg-schema.js"

// The trade/ledger bodies (statement programs) driven on PostgreSQL: the same bodies SQLite runs on its hot
// connection, here asynchronously on one connection in one transaction. Each test migrates the market domain into
// a fresh schema of its own (test/support/pg-schema.ts); skipped only when there is no PostgreSQL to test against.
const W0 = "0x00000000000000000000000000000000000000b0"
const W1 = "0x00000000000000000000000000000000000000b1"
const W2 = "0x00000000000000000000000000000000000000b2"
const W3 = "0x00000000000000000000000000000000000000b3"
const W4 = "0x00000000000000000000000000000000000000b4"

const MarketOnPg = Layer.mergeAll(Trading.Default, TokenMarket.Default).pipe(
  Layer.provideMerge(Ledger.Default),
  Layer.provideMerge(MarketEvents.Default),
  Layer.provideMerge(SqlDirect.Default),
  Layer.provide([MarketConfig.Default, Shutdown.Default]),
  Layer.provideMerge(migrationsLayer([marketMigrations])),
  Layer.provideMerge(withDialect(pgInFreshSchema)),
  Layer.orDie
)

const counts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ trades: string; entries: string; events: string; chat: string }>`
    SELECT (SELECT count(*) FROM market_trades) AS trades, (SELECT count(*) FROM ledger_entries) AS entries,
           (SELECT count(*) FROM market_events) AS events, (SELECT count(*) FROM market_chat) AS chat`
  return {
    trades: Number(row!.trades),
    entries: Number(row!.entries),
    events: Number(row!.events),
    chat: Number(row!.chat)
  }
}).pipe(Effect.orDie)

/** A bare curve (launched inside `sql.withTransaction`: its ledger post is a savepoint of that transaction). */
const launched = (ticker: string, wallets: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    yield* (yield* TokenMarket).launch(ticker)
    const ledger = yield* Ledger
    for (const wallet of wallets) yield* ledger.mint(walletAccount(wallet), toUnits("100"), "test funding")
  }).pipe(Effect.orDie)

const settings = { feeBps: 100n, agentShareBps: 5_000n }

describe.skipIf(postgresSkipReason !== undefined)(
  `statement programs on PostgreSQL${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.effect("a buy and a sell settle in the ledger; integers come back as bigint", () =>
      Effect.gen(function* () {
        yield* launched("PGA", [W0])
        const market = yield* TokenMarket
        const ledger = yield* Ledger
        const bought = yield* market.buy("PGA", walletAccount(W0), toUnits("2"), settings)
        assert.strictEqual(typeof bought.tokens, "bigint")
        assert.strictEqual(bought.walletCoinAfter, toUnits("98"))
        assert.strictEqual(yield* ledger.balance(walletAccount(W0), "PGA"), bought.tokens)
        const sold = yield* market.sell("PGA", walletAccount(W0), bought.tokens / 2n, settings)
        assert.strictEqual(sold.side, "sell")
        assert.strictEqual(yield* ledger.balance(walletAccount(W0), "PGA"), bought.tokens - bought.tokens / 2n)
        assert.strictEqual(yield* ledger.balance(walletAccount(W0), COIN), toUnits("98") + sold.coin)
        assert.isTrue(sold.entryId > bought.entryId && sold.tradeId > bought.tradeId)
        const curve = yield* market.curve("PGA")
        assert.strictEqual(curve.virtualCoin, sold.next.virtualCoin)
        const audit = yield* ledger.audit()
        assert.deepStrictEqual(audit.problems, [])
        const direct = yield* SqlDirect
        const types = yield* direct.readProgram(function* (db) {
          const [row] = yield* db.all<{ n: unknown; small: unknown; total: unknown }>(
            "SELECT count(*) AS n, CAST(? AS INTEGER) AS small, sum(balance) AS total FROM ledger_balances WHERE asset = ?",
            [7, "PGA"]
          )
          return row!
        })
        assert.deepStrictEqual(types, { n: 3n, small: 7n, total: 0n })
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("a refused trade rolls back everything it wrote and is the typed failure", () =>
      Effect.gen(function* () {
        yield* launched("PGB", [W2])
        const market = yield* TokenMarket
        const ledger = yield* Ledger
        const before = yield* counts
        const coin = yield* ledger.balance(walletAccount(W2), COIN)
        // W2 holds no PGB: the sell reaches the ledger's upsert (which moved the curve's and the wallet's balances)
        // before the overdraft is seen, so the rollback has something to undo.
        const refused = yield* market.sell("PGB", walletAccount(W2), toUnits("5"), settings).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "InsufficientFunds")
        // W4 holds no coin at all.
        const broke = yield* market.buy("PGB", walletAccount(W4), toUnits("1"), settings).pipe(Effect.flip)
        assert.strictEqual(broke._tag, "InsufficientFunds")
        assert.deepStrictEqual(yield* counts, before)
        assert.strictEqual(yield* ledger.balance(walletAccount(W2), COIN), coin)
        assert.strictEqual(yield* ledger.balance(walletAccount(W2), "PGB"), 0n)
        assert.strictEqual(yield* ledger.balance(curveAccount("PGB"), COIN), 0n)
        assert.deepStrictEqual((yield* ledger.audit()).problems, [])
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("a group commit: each order in a savepoint, a refused one undone alone, its neighbours commit", () =>
      Effect.gen(function* () {
        yield* launched("PGC", [W1, W2, W3])
        const sql = yield* SqlClient.SqlClient
        // An agent for the ticker, so a large trade writes its chat line and event too.
        yield* sql`INSERT INTO market_agents (ticker, instance_id, name, description, status, burn_rate_hourly,
        costs_accrued_at, created_at) VALUES ('PGC', 'pgc-1', 'Pg Agent', 'test', 'running', 0, 0, 0)`.pipe(
          Effect.orDie
        )
        const trading = yield* Trading
        const ledger = yield* Ledger
        const before = yield* counts
        const w2Coin = yield* ledger.balance(walletAccount(W2), COIN)
        const order = (wallet: string, side: "buy" | "sell", amount: string, key?: string): TradeOrder => ({
          side,
          ticker: "PGC",
          wallet,
          amount: toUnits(amount),
          minimum: 0n,
          ...(key === undefined ? {} : { idempotency: { principal: `wallet:${wallet}`, key, fingerprint: amount } })
        })
        const exits = yield* trading.tradeBatch([
          order(W1, "buy", "10"),
          order(W2, "sell", "5"),
          order(W3, "buy", "2", "k-1"),
          { ...order(W2, "buy", "1"), minimum: 10n ** 30n },
          order(W3, "buy", "2", "k-1")
        ])
        assert.deepStrictEqual(
          exits.map((exit) => (Exit.isSuccess(exit) ? (exit.value.replayed ? "replayed" : "ok") : "refused")),
          ["ok", "refused", "ok", "refused", "replayed"]
        )
        assert.deepStrictEqual(yield* counts, {
          trades: before.trades + 2,
          entries: before.entries + 2,
          events: before.events + 3,
          chat: before.chat + 1
        })
        assert.strictEqual(yield* ledger.balance(walletAccount(W2), COIN), w2Coin, "W2's refused orders moved nothing")
        assert.deepStrictEqual((yield* ledger.audit()).problems, [])
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("savepoint(): a failed statement inside one is undone alone; the transaction goes on and commits", () =>
      Effect.gen(function* () {
        yield* launched("PGD", [])
        const direct = yield* SqlDirect
        const outcome = yield* direct.transactionProgram(function* (db) {
          yield* db.run("UPDATE market_curves SET launched_at = 1 WHERE ticker = ?", ["PGD"])
          try {
            yield* savepoint(
              db,
              (function* () {
                yield* db.run("UPDATE market_curves SET launched_at = 2 WHERE ticker = ?", ["PGD"])
                yield* db.run("INSERT INTO no_such_table VALUES (1)")
              })()
            )
          } catch (thrown) {
            return (thrown as { _tag?: string })._tag
          }
          return "not thrown"
        })
        assert.strictEqual(outcome, "SqlError")
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ launched_at: string }>`SELECT launched_at FROM market_curves WHERE ticker = 'PGD'`
        assert.strictEqual(Number(row!.launched_at), 1)
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("concurrent trades on two tickers from shared wallets: row locks serialise them, the audit holds", () =>
      Effect.gen(function* () {
        yield* launched("PGE", [W1, W2, W3])
        yield* launched("PGF", [])
        const market = yield* TokenMarket
        const ledger = yield* Ledger
        const treasuryBefore = yield* ledger.balance(TREASURY, COIN)
        const wallets = [W1, W2, W3]
        const results = yield* Effect.forEach(
          Array.from({ length: 24 }, (_, i) => i),
          (i) => market.buy(i % 2 === 0 ? "PGE" : "PGF", walletAccount(wallets[i % 3]!), toUnits("0.5"), settings),
          { concurrency: 8 }
        )
        assert.strictEqual(results.length, 24)
        assert.deepStrictEqual((yield* ledger.audit()).problems, [])
        // Each buy priced on the curve its predecessor left (no lost update: the curve's row is locked from the
        // trade's read to its commit), and the curve ends where the last trade put it.
        for (const ticker of ["PGE", "PGF"]) {
          const trades = results.filter((r) => r.ticker === ticker).sort((a, b) => a.tradeId - b.tradeId)
          let coin = defaultLaunch.virtualCoin
          for (const trade of trades) {
            assert.strictEqual(trade.next.virtualCoin, coin + trade.curveCoin, `${ticker} trade ${trade.tradeId}`)
            coin = trade.next.virtualCoin
          }
          assert.deepStrictEqual(yield* market.curve(ticker), trades[trades.length - 1]!.next)
        }
        const treasury = yield* ledger.balance(TREASURY, COIN)
        assert.strictEqual(
          treasury - treasuryBefore,
          results.reduce((sum, r) => sum + (r.fee - r.agentFee), 0n)
        )
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect(
      "a serialization failure re-runs the whole program (not caught by its savepoints); five tries, then it stands",
      () =>
        Effect.gen(function* () {
          yield* launched("PGG", [])
          const direct = yield* SqlDirect
          const sql = yield* SqlClient.SqlClient
          const conflict = "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$"
          let tries = 0
          const caught: Array<string> = []
          const outcome = yield* direct.transactionProgram(function* (db) {
            tries++
            yield* db.run("UPDATE market_curves SET launched_at = launched_at + 1 WHERE ticker = ?", ["PGG"])
            try {
              yield* savepoint(
                db,
                (function* () {
                  if (tries === 1) yield* db.run(conflict)
                })()
              )
            } catch (thrown) {
              caught.push(String(thrown))
            }
            return tries
          })
          assert.strictEqual(outcome, 2)
          assert.deepStrictEqual(caught, [], "the savepoint never saw the retryable failure")
          const [row] = yield* sql<{ launched_at: string }>`SELECT launched_at FROM market_curves WHERE ticker = 'PGG'`
          const launchedAt = Number(row!.launched_at)
          let always = 0
          const failed = yield* direct
            .transactionProgram(function* (db) {
              always++
              yield* db.run("UPDATE market_curves SET launched_at = launched_at + 1 WHERE ticker = ?", ["PGG"])
              yield* db.run(conflict)
            })
            .pipe(Effect.flip)
          assert.strictEqual(failed._tag, "SqlError")
          assert.strictEqual(always, 5)
          const [after] = yield* sql<{
            launched_at: string
          }>`SELECT launched_at FROM market_curves WHERE ticker = 'PGG'`
          assert.strictEqual(Number(after!.launched_at), launchedAt, "every try rolled back")
        }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("readLatest reads the committed state on a connection of its own", () =>
      Effect.gen(function* () {
        const direct = yield* SqlDirect
        const changes = direct.readLatest(function* (db) {
          const [row] = yield* db.all<{ n: bigint }>("SELECT n FROM market_api_key_changes WHERE id = 1")
          return row?.n ?? -1n
        })
        const before = yield* changes
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE market_api_key_changes SET n = n + 1 WHERE id = 1`.pipe(Effect.orDie)
        assert.strictEqual(yield* changes, before + 1n)
      }).pipe(Effect.provide(MarketOnPg))
    )
  }
)
