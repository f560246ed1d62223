import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Either, Fiber, Layer, Option, TestClock } from "effect"
import { HostProbe, probeKey } from "../../src/services/fleet/control/probe/HostProbe.js"
import { GENERATED_ORDER_ID } from "../../src/services/market/Trades.js"
import {
  Agents,
  AppTest,
  agentAccount,
  COIN,
  CoinHistory,
  JobQueue,
  LeaseKeeper,
  Ledger,
  MarketAgent,
  MarketServices,
  ObjectStore,
  ReleaseRun,
  type RunInputs,
  RunRecords,
  type RunState,
  SqlTest,
  type TradeOrder,
  Trading,
  toUnits,
  UNIT,
  walletAccount
} from "../support/keel.js"
import { root } from "../support/server.js"

// Issue 45, exactly-once effects over at-least-once delivery (docs/cluster.md, "Exactly-once effects"). A message in
// flight on a runner that dies runs again on the shard's new owner, and a workflow activity whose reply was not
// stored runs again when its workflow resumes: each may run a second time after its effect committed. Each test
// here delivers the same message twice (to the entity, as a redelivery does), or runs the same activity's body twice
// with the same input (what the engine re-runs), and checks that the effect happened once and that the second
// answer agrees with the first. On SQLite, and on PostgreSQL under test:pg (KEEL_TEST_DATABASE_URL).

const W1 = "0x00000000000000000000000000000000000000d1"

/** The application in runners mode (orders carry their ids), on the test database; `settings` beside the env. */
const app = (settings: Record<string, string> = {}) =>
  AppTest().pipe(
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ KEEL_CLUSTER_MODE: "runners", ...settings }))).pipe(
          ConfigProvider.orElse(() => ConfigProvider.fromEnv())
        )
      )
    )
  )

const count = (query: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe<{ n: unknown }>(query).pipe(Effect.map((rows) => Number(rows[0]!.n)))
  ).pipe(Effect.orDie)

describe("MarketAgent: a trade delivered twice is traded once", () => {
  const setup = Effect.gen(function* () {
    yield* (yield* Agents).create({ ticker: "TWICE", name: "Twice", description: "", burnRateHourly: 0n })
    yield* (yield* Ledger).mint(walletAccount(W1), toUnits("100"), "test funding")
  }).pipe(Effect.orDie)

  /** An order as the HTTP edge makes it in runners mode: with its id (here a made-up one, as the edge makes). */
  const order = (id: string, coin: string): TradeOrder => ({
    side: "buy",
    ticker: "TWICE",
    wallet: W1,
    amount: toUnits(coin),
    minimum: 0n,
    idempotency: { principal: `wallet:${W1}`, key: `${GENERATED_ORDER_ID}${id}`, fingerprint: `f-${id}` }
  })

  const coinOf = Effect.flatMap(Ledger, (ledger) => ledger.balance(walletAccount(W1), COIN))

  it.live(
    "Trade: the second delivery answers the first's receipt (replayed) and moves nothing",
    () =>
      Effect.gen(function* () {
        yield* setup
        const actor = (yield* MarketAgent.client)("TWICE")
        const first = yield* actor.Trade(order("t1", "1"))
        const coin = yield* coinOf
        const second = yield* actor.Trade(order("t1", "1"))
        assert.isFalse(first.replayed)
        assert.isTrue(second.replayed)
        assert.deepStrictEqual(second.receipt, first.receipt)
        assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades"), 1)
        assert.strictEqual(yield* coinOf, coin)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "TradeBatch: every order of the second delivery answers its first receipt; the ledger moved once",
    () =>
      Effect.gen(function* () {
        yield* setup
        const actor = (yield* MarketAgent.client)("TWICE")
        const batch = { orders: [order("b1", "1"), order("b2", "2")] }
        const first = yield* actor.TradeBatch(batch)
        const coin = yield* coinOf
        const second = yield* actor.TradeBatch(batch)
        const receipts = (results: typeof first) => results.map((result) => Either.getOrThrow(result).receipt)
        assert.deepStrictEqual(receipts(second), receipts(first))
        assert.deepStrictEqual(
          second.map((result) => Either.getOrThrow(result).replayed),
          [true, true]
        )
        assert.strictEqual(yield* count("SELECT count(*) AS n FROM market_trades"), 2)
        assert.strictEqual(yield* coinOf, coin)
        assert.isTrue((yield* (yield* Ledger).audit()).ok)
      }).pipe(Effect.provide(app())),
    60_000
  )
})

describe("MarketAgent Accrue: an accrual delivered twice charges each interval once", () => {
  /** The marketplace alone on the test database (TestClock moves its time). */
  const MarketTest = MarketServices.pipe(Layer.provideMerge(SqlTest))

  const launch = (ticker: string) =>
    Effect.gen(function* () {
      const agents = yield* Agents
      yield* agents.create({ ticker, name: ticker, description: "", burnRateHourly: toUnits("2") })
      yield* (yield* Ledger).mint(agentAccount(ticker), toUnits("10"), "funding")
      return agents
    })

  /** The ledger entries charging `ticker`'s costs. */
  const costEntries = (ticker: string) =>
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ n: unknown }>`SELECT count(*) AS n FROM ledger_entries WHERE kind = 'cost' AND reference = ${ticker}`
    ).pipe(
      Effect.map((rows) => Number(rows[0]!.n)),
      Effect.orDie
    )

  it.effect("delivered again at once: the second charges nothing, the ledger has one charge", () =>
    Effect.gen(function* () {
      const agents = yield* launch("ACCR")
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(yield* agents.accrue("ACCR"), 2n * UNIT)
      // The accrual's answer is what that delivery charged: the hour was charged by the first.
      assert.strictEqual(yield* agents.accrue("ACCR"), 0n)
      const agent = yield* agents.find("ACCR")
      assert.strictEqual(agent.balance, 8n * UNIT)
      assert.strictEqual(agent.totalCosts, 2n * UNIT)
      assert.strictEqual(yield* costEntries("ACCR"), 1)
      // Delivered again later, it charges the time since the first: an hour is never charged twice.
      yield* TestClock.adjust("30 minutes")
      assert.strictEqual(yield* agents.accrue("ACCR"), UNIT)
      assert.strictEqual((yield* agents.find("ACCR")).totalCosts, 3n * UNIT)
    }).pipe(Effect.provide(MarketTest))
  )

  /**
   * `effect` while a transaction of another session holds `ticker`'s agent row, released once two sessions wait on
   * it, directly or behind each other: both runs of `effect` have read the agent before either wrote. PostgreSQL
   * only (SQLite runs one write transaction at a time: there the two runs are one after the other).
   */
  const bothReadBeforeEitherWrites = <A, E, R>(ticker: string, effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const holder = yield* Deferred.make<number>()
      const release = yield* Deferred.make<void>()
      const holding = yield* Effect.fork(
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT ticker FROM market_agents WHERE ticker = ${ticker} FOR UPDATE`
              const [me] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
              yield* Deferred.succeed(holder, Number(me!.pid))
              yield* Deferred.await(release)
            })
          )
          .pipe(Effect.orDie)
      )
      const pid = yield* Deferred.await(holder)
      // Forked from this fiber, not from the holder's: outside its transaction.
      const runs = yield* Effect.fork(effect)
      const waiting = sql<{ n: unknown }>`WITH RECURSIVE blocked(pid) AS (
          SELECT pid FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))
          UNION SELECT a.pid FROM pg_stat_activity a JOIN blocked b ON b.pid = ANY(pg_blocking_pids(a.pid)))
        SELECT count(*) AS n FROM blocked`.pipe(
        Effect.map((rows) => Number(rows[0]!.n)),
        Effect.orDie
      )
      let blocked = 0
      // Real time (the test clock stands still): at most 10 s for two sessions to start waiting.
      for (let i = 0; i < 1_000 && blocked < 2; i++) {
        blocked = yield* waiting
        if (blocked < 2) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      }
      assert.strictEqual(blocked, 2, "both runs wait on the agent")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holding)
      return yield* Fiber.join(runs)
    })

  it.effect("two runs of one accrual at once (a redelivery while the first still runs): one charge", () =>
    Effect.gen(function* () {
      const agents = yield* launch("BOTH")
      yield* TestClock.adjust("1 hour")
      const twice = Effect.all([agents.accrue("BOTH"), agents.accrue("BOTH")], { concurrency: 2 })
      const onPostgres = (yield* SqlClient.SqlClient).onDialectOrElse({ pg: () => true, orElse: () => false })
      // The interval is claimed by a write conditional on the last accrual the run read: the second waits, finds
      // it moved, and charges nothing.
      const charged = onPostgres ? yield* bothReadBeforeEitherWrites("BOTH", twice) : yield* twice
      assert.deepStrictEqual(
        charged.toSorted((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        [0n, 2n * UNIT]
      )
      const agent = yield* agents.find("BOTH")
      assert.strictEqual(agent.balance, 8n * UNIT)
      assert.strictEqual(agent.totalCosts, 2n * UNIT)
      assert.strictEqual(yield* costEntries("BOTH"), 1)
      assert.isTrue((yield* (yield* Ledger).audit()).ok)
    }).pipe(Effect.provide(MarketTest))
  )
})

describe("LeaseKeeper: a holder's request delivered twice gets its first answer; fences strictly increase", () => {
  const keeper = (key: string) => Effect.map(LeaseKeeper.client, (client) => client(key))

  it.live(
    "Acquire delivered twice: the same fence and acquired_at, the lease extended; a rival is still refused",
    () =>
      Effect.gen(function* () {
        const lease = yield* keeper("redelivery:acquire")
        const first = yield* lease.Acquire({ holder: "run-a", ttlMillis: 60_000 })
        const second = yield* lease.Acquire({ holder: "run-a", ttlMillis: 60_000 })
        assert.strictEqual(first.fence, 1)
        assert.strictEqual(second.fence, first.fence)
        assert.strictEqual(second.acquiredAt, first.acquiredAt)
        assert.isAtLeast(second.expiresAt, first.expiresAt)
        const rival = yield* Effect.flip(lease.Acquire({ holder: "run-b", ttlMillis: 60_000 }))
        assert.strictEqual(rival._tag, "LeaseHeld")
        yield* lease.Release({ holder: "run-a" })
        assert.strictEqual((yield* lease.Acquire({ holder: "run-b", ttlMillis: 60_000 })).fence, 2)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "Acquire that took over a lapsed lease, delivered twice: the fence grew once",
    () =>
      Effect.gen(function* () {
        const lease = yield* keeper("redelivery:takeover")
        yield* lease.Acquire({ holder: "run-a", ttlMillis: 100 })
        yield* Effect.sleep("200 millis")
        const first = yield* lease.Acquire({ holder: "run-b", ttlMillis: 60_000 })
        const second = yield* lease.Acquire({ holder: "run-b", ttlMillis: 60_000 })
        assert.strictEqual(first.fence, 2)
        assert.strictEqual(second.fence, 2)
        assert.strictEqual(second.acquiredAt, first.acquiredAt)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "Renew delivered twice: the same fence, the lease extended from the second",
    () =>
      Effect.gen(function* () {
        const lease = yield* keeper("redelivery:renew")
        const held = yield* lease.Acquire({ holder: "run-a", ttlMillis: 60_000 })
        const first = yield* lease.Renew({ holder: "run-a", ttlMillis: 60_000 })
        const second = yield* lease.Renew({ holder: "run-a", ttlMillis: 60_000 })
        assert.strictEqual(first.fence, held.fence)
        assert.strictEqual(second.fence, held.fence)
        assert.strictEqual(second.acquiredAt, held.acquiredAt)
        assert.isAtLeast(second.expiresAt, first.expiresAt)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "Release delivered twice: the second answers the first's release (not LeaseNotHeld); the next fence is one more",
    () =>
      Effect.gen(function* () {
        const lease = yield* keeper("redelivery:release")
        const held = yield* lease.Acquire({ holder: "run-a", ttlMillis: 60_000 })
        const first = yield* lease.Release({ holder: "run-a" })
        const second = yield* lease.Release({ holder: "run-a" })
        assert.deepStrictEqual(second, first)
        assert.strictEqual(first.fence, held.fence)
        assert.isNull(yield* lease.Status())
        const next = yield* lease.Acquire({ holder: "run-b", ttlMillis: 60_000 })
        assert.strictEqual(next.fence, held.fence + 1)
        // Once another holder has the key, the old holder's release is told whose it is now.
        const late = yield* Effect.flip(lease.Release({ holder: "run-a" }))
        assert.strictEqual(late._tag, "LeaseHeld")
      }).pipe(Effect.provide(app())),
    60_000
  )
})

describe("FleetProbe activities run twice: the same answers, the report stored once", () => {
  const registry = `${root}/examples/registry.yml`
  const probeApp = HostProbe.Default.pipe(Layer.provideMerge(app({ KEEL_REGISTRY: registry })))

  it.live(
    "registry, reach and report, each run twice with one execution id",
    () =>
      Effect.gen(function* () {
        const probe = yield* HostProbe
        const execution = "0123456789abcdef0123456789abcdef"
        const declared = [yield* probe.declared(execution, "forge-1"), yield* probe.declared(execution, "forge-1")]
        const reached = [yield* probe.reach(execution, "forge-1"), yield* probe.reach(execution, "forge-1")]
        assert.deepStrictEqual(declared[1], declared[0])
        assert.deepStrictEqual(reached[1], reached[0])
        const result = { host: "forge-1", registry_digest: declared[0]!.digest, kernel: reached[0]!.kernel }
        const reports = [yield* probe.report(execution, result), yield* probe.report(execution, result)]
        assert.deepStrictEqual(reports[1], reports[0])
        const store = yield* ObjectStore
        const keys = (yield* store.list(`state/probes/${execution}/`).pipe(Effect.orDie)).map((head) => head.key)
        // The report is a put to one key: stored once, with the result.
        assert.strictEqual(keys.filter((key) => key.endsWith("/report.json")).length, 1)
        const stored = Option.getOrThrow(yield* store.get(probeKey(execution, "report.json")).pipe(Effect.orDie))
        assert.deepStrictEqual(JSON.parse(new TextDecoder().decode(stored.bytes)), result)
        // A witness per run of a step, on purpose: what lets a test see that a step ran again.
        for (const step of ["1-registry", "2-reach", "3-report"])
          assert.strictEqual(keys.filter((key) => key.includes(`/${step}.`)).length, 2, step)
      }).pipe(Effect.provide(probeApp)),
    60_000
  )
})

describe("ReleaseRun's advance-N activity run twice: decided from the run record, one build job", () => {
  const inputs: RunInputs = {
    product: "tool",
    version: "1.0.0",
    channel: "stable",
    source: { revision: "1".repeat(40), tree: "2".repeat(40), sha256: "3".repeat(64), size: 1 },
    manifest_sha256: "4".repeat(64)
  }
  /** A run recorded as submitted (or `state`), to be built on forge-1. */
  const opened = (state: RunState = "submitted") =>
    Effect.flatMap(RunRecords, (runs) =>
      runs.open(
        inputs,
        new Date(0).toISOString(),
        { recipe: { platform: "linux-x64" }, builder: { target: "forge-1" } },
        state
      )
    )
  /** The activity's body, with its round's bound already past: it answers as soon as the run waits on its build. */
  const round = (runId: string) =>
    Effect.flatMap(ReleaseRun, (runs) => runs.advance(runId, { deadline: 0, stepPauseMillis: 0 }))
  const buildJobs = count("SELECT count(*) AS n FROM jobs WHERE kind = 'release-build'")

  it.live(
    "run again after it queued the build and recorded it: the same record, the same job",
    () =>
      Effect.gen(function* () {
        const { record } = yield* opened()
        const first = yield* round(record.run_id)
        const second = yield* round(record.run_id)
        assert.strictEqual(first.state, "building")
        assert.deepStrictEqual(second, first)
        assert.strictEqual(yield* buildJobs, 1)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "run again after it queued the build but before it recorded it: the job is found by its key, none queued",
    () =>
      Effect.gen(function* () {
        const { record } = yield* opened()
        // What the first run left when it died between the job's insert and the record's update.
        const queued = yield* (yield* JobQueue).submit({
          kind: "release-build",
          target: "forge-1",
          argv: ["ctl", "release", "build", "--run", record.run_id],
          idempotencyKey: `${record.run_id}:linux-x64`
        })
        const after = yield* round(record.run_id)
        assert.strictEqual(after.state, "building")
        assert.strictEqual((after.steps.build as { job: string }).job, queued.id)
        assert.strictEqual(yield* buildJobs, 1)
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "run again once the run is published: answers it as it stands, writes nothing",
    () =>
      Effect.gen(function* () {
        const { record } = yield* opened("published")
        const first = yield* round(record.run_id)
        const second = yield* round(record.run_id)
        assert.deepStrictEqual(first, record)
        assert.deepStrictEqual(second, record)
        assert.strictEqual(yield* buildJobs, 0)
      }).pipe(Effect.provide(app())),
    60_000
  )
})

describe("the market schedule's steps run again (its singleton restarted on another runner runs its first tick at once)", () => {
  it.live(
    "deleting expired trade claims twice: the second deletes nothing more; younger claims are kept",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const now = Date.now()
        for (const [key, age] of [
          ["old", 25 * 3_600_000],
          ["young", 3_600_000]
        ] as const)
          yield* sql`INSERT INTO market_idempotency (principal, key, fingerprint, response, created_at)
            VALUES ('wallet:x', ${key}, 'f', '{}', ${now - age})`
        const trading = yield* Trading
        yield* trading.forgetExpiredClaims
        yield* trading.forgetExpiredClaims
        const keys = yield* sql<{ key: string }>`SELECT key FROM market_idempotency ORDER BY key`
        assert.deepStrictEqual(
          keys.map((row) => row.key),
          ["young"]
        )
      }).pipe(Effect.provide(app())),
    60_000
  )

  it.live(
    "a price sample run again adds one more point, the current price at its own instant; nothing else changes",
    () =>
      Effect.gen(function* () {
        const history = yield* CoinHistory
        const ledger = yield* Ledger
        yield* history.setPrice(toUnits("2.5"))
        const before = yield* ledger.audit()
        yield* history.sample
        yield* history.sample
        const sql = yield* SqlClient.SqlClient
        const samples = yield* sql<{ price: unknown }>`SELECT price FROM market_coin_prices WHERE source = 'sample'`
        assert.deepStrictEqual(
          samples.map((row) => BigInt(row.price as string)),
          [toUnits("2.5"), toUnits("2.5")]
        )
        assert.deepStrictEqual(yield* ledger.audit(), before)
      }).pipe(Effect.provide(app())),
    60_000
  )
})
