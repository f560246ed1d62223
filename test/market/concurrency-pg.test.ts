import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { appendEvent } from "../../src/services/market/MarketEvents.js"
import { marketMigrations } from "../../src/services/market/migrations.js"
import { migrationsLayer, withDialect } from "../../src/services/platform/Database.js"
import {
  Agents,
  Ledger,
  MarketConfig,
  MarketEvents,
  MarketServices,
  Shutdown,
  SqlDirect,
  TokenMarket,
  type TradeOrder,
  Trading,
  toUnits,
  walletAccount
} from "../support/keel.js"
import { pgInFreshSchema, postgresSkipReason } from "../support/pg-schema.js"

// Concurrency that SQLite's single writer made safe, proven on PostgreSQL with several connections of one pool
// (docs/database.md, "Concurrency on PostgreSQL"). Each test migrates the market domain into a fresh schema of its
// own; skipped only when there is no PostgreSQL to test against.
const W1 = "0x00000000000000000000000000000000000000c1"

const MarketOnPg = Layer.mergeAll(Trading.Default, TokenMarket.Default).pipe(
  Layer.provideMerge(Ledger.Default),
  Layer.provideMerge(MarketEvents.Default),
  Layer.provideMerge(SqlDirect.Default),
  Layer.provide([MarketConfig.Default, Shutdown.Default]),
  Layer.provideMerge(migrationsLayer([marketMigrations])),
  Layer.provideMerge(withDialect(pgInFreshSchema)),
  Layer.orDie
)

const AgentsOnPg = MarketServices.pipe(
  Layer.provideMerge(migrationsLayer([marketMigrations])),
  Layer.provideMerge(withDialect(pgInFreshSchema)),
  Layer.orDie
)

/** Two of `launch` at once, each on a connection of its own: their exits. */
const twice = <A, E>(launch: Effect.Effect<A, E>) =>
  Effect.all([Effect.exit(launch), Effect.exit(launch)], { concurrency: "unbounded" })

const refusedAsTaken = (exits: ReadonlyArray<Exit.Exit<unknown, unknown>>) => {
  assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
  const failed = exits.find(Exit.isFailure)!
  // A typed failure (not a defect): AGENT_EXISTS, as the sequential second launch answers.
  assert.isTrue(Exit.isFailure(failed) && failed.cause._tag === "Fail", JSON.stringify(failed))
  assert.include(JSON.stringify(failed), "AGENT_EXISTS")
}

const launched = (ticker: string, wallets: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    yield* (yield* TokenMarket).launch(ticker)
    const ledger = yield* Ledger
    for (const wallet of wallets) yield* ledger.mint(walletAccount(wallet), toUnits("100"), "test funding")
  }).pipe(Effect.orDie)

const tradeCount = (ticker: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM market_trades WHERE ticker = ${ticker}`
    return Number(row!.n)
  }).pipe(Effect.orDie)

const buy = (ticker: string, key: string, fingerprint: string): TradeOrder => ({
  side: "buy",
  ticker,
  wallet: W1,
  amount: toUnits("1"),
  minimum: 0n,
  idempotency: { principal: "wallet:c1", key, fingerprint }
})

describe.skipIf(postgresSkipReason !== undefined)(
  `market concurrency on PostgreSQL${postgresSkipReason === undefined ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    it.effect("one Idempotency-Key sent on several connections at once: one trade, every answer its receipt", () =>
      Effect.gen(function* () {
        yield* launched("CIA", [W1])
        const trading = yield* Trading
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 6 }, () => buy("CIA", "same-key", "fp-1")),
          (order) => trading.trade(order),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(yield* tradeCount("CIA"), 1)
        assert.strictEqual(outcomes.filter((outcome) => !outcome.replayed).length, 1)
        const first = JSON.stringify(outcomes.find((outcome) => !outcome.replayed)!.receipt)
        for (const outcome of outcomes) assert.strictEqual(JSON.stringify(outcome.receipt), first)
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect(
      "one Idempotency-Key, two different orders at once: one trades, the other is IDEMPOTENCY_KEY_REUSED",
      () =>
        Effect.gen(function* () {
          yield* launched("CIB", [W1])
          const trading = yield* Trading
          const exits = yield* Effect.forEach(
            [buy("CIB", "k", "fp-a"), buy("CIB", "k", "fp-b")],
            (order) => Effect.exit(trading.trade(order)),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(yield* tradeCount("CIB"), 1)
          assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
          const failed = exits.find(Exit.isFailure)
          assert.isDefined(failed)
          assert.include(JSON.stringify(failed), "IdempotencyKeyReused")
        }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect(
      "two writers append with random delays while a reader polls seq > cursor: no committed event skipped",
      () =>
        Effect.gen(function* () {
          const direct = yield* SqlDirect
          const events = yield* MarketEvents
          const sql = yield* SqlClient.SqlClient
          let writing = 2
          // Each event's transaction sleeps a random while before and after its append, so commits overlap.
          const writer = (name: string) =>
            Effect.forEach(
              Array.from({ length: 100 }, (_, i) => i),
              (i) =>
                direct.transactionProgram(function* (db) {
                  yield* db.run("SELECT pg_sleep(?)", [Math.random() * 0.004])
                  yield* appendEvent(db, "chat", { writer: name, i }, 0)
                  yield* db.run("SELECT pg_sleep(?)", [Math.random() * 0.004])
                }),
              { discard: true }
            ).pipe(Effect.ensuring(Effect.sync(() => writing--)))
          const seen: Array<number> = []
          const reader = Effect.gen(function* () {
            let cursor = 0
            // Bounded (a hang guard: each pass is a round trip); the last pass runs after both writers have committed.
            for (let pass = 0; pass < 1_000_000; pass++) {
              const done = writing === 0
              const page = yield* events.after(cursor)
              for (const event of page) seen.push(event.seq)
              if (page.length > 0) cursor = page[page.length - 1]!.seq
              else if (done) return
              else yield* Effect.yieldNow()
            }
            return yield* Effect.die(new Error("the reader's bound was reached before the writers finished"))
          })
          yield* Effect.all([writer("a"), writer("b"), reader], { concurrency: "unbounded", discard: true })
          const committed = yield* sql<{ seq: string }>`SELECT seq FROM market_events ORDER BY seq`
          assert.strictEqual(committed.length, 200)
          assert.deepStrictEqual(
            seen,
            committed.map((row) => Number(row.seq))
          )
        }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("two launches of one ticker at once: one curve, the other is AGENT_EXISTS (not a defect)", () =>
      Effect.gen(function* () {
        const market = yield* TokenMarket
        for (const ticker of ["CLA", "CLB", "CLC"]) refusedAsTaken(yield* twice(market.launch(ticker)))
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM ledger_entries WHERE kind = 'launch'`
        assert.strictEqual(Number(row!.n), 3)
        assert.deepStrictEqual((yield* (yield* Ledger).audit()).problems, [])
      }).pipe(Effect.provide(MarketOnPg))
    )

    it.effect("two agents created with one ticker at once: one agent, the other is AGENT_EXISTS (not a defect)", () =>
      Effect.gen(function* () {
        const agents = yield* Agents
        for (const ticker of ["CAA", "CAB", "CAC"])
          refusedAsTaken(yield* twice(agents.create({ ticker, name: ticker, description: "", burnRateHourly: 0n })))
        assert.strictEqual((yield* agents.list({ limit: 10, offset: 0 })).length, 3)
      }).pipe(Effect.provide(AgentsOnPg))
    )
  }
)
