import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import {
  Agents,
  AppTest,
  agentAccount,
  Chat,
  Ledger,
  MarketAgent,
  MarketServices,
  SqlTest,
  toUnits,
  UNIT
} from "../support/keel.js"

const HOUR = "1 hour"

/** The marketplace alone: no other domain's pollers to replay when the test clock jumps by hours. */
const MarketTest = MarketServices.pipe(Layer.provideMerge(SqlTest))

const launch = (ticker: string, burn: string, funding: string) =>
  Effect.gen(function* () {
    const agents = yield* Agents
    yield* agents.create({ ticker, name: ticker, description: "", burnRateHourly: toUnits(burn) })
    if (funding !== "0") yield* (yield* Ledger).mint(agentAccount(ticker), toUnits(funding), "funding")
    return agents
  })

describe("agents: costs and status", () => {
  it.effect("costs accrue from elapsed time, are charged once, and show in total_costs and runway", () =>
    Effect.gen(function* () {
      const agents = yield* launch("BURN", "2", "10")
      yield* TestClock.adjust(HOUR)
      assert.strictEqual(yield* agents.accrue("BURN"), 2n * UNIT)
      assert.strictEqual(yield* agents.accrue("BURN"), 0n) // the same instant again charges nothing
      yield* TestClock.adjust("30 minutes")
      assert.strictEqual(yield* agents.accrue("BURN"), UNIT)
      const agent = yield* agents.find("BURN")
      assert.strictEqual(agent.balance, 7n * UNIT)
      assert.strictEqual(agent.totalCosts, 3n * UNIT)
      assert.strictEqual(agent.status, "running")
      const audit = yield* (yield* Ledger).audit()
      assert.isTrue(audit.ok)
      assert.strictEqual(audit.coinSupply, 7n * UNIT) // costs are burned: they leave the supply
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect("a missed schedule catches up: three hours of downtime are charged as three hours", () =>
    Effect.gen(function* () {
      const agents = yield* launch("LATE", "1", "10")
      yield* TestClock.adjust("3 hours")
      assert.strictEqual(yield* agents.accrue("LATE"), 3n * UNIT)
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect("an agent whose balance runs out pays what it has and goes bankrupt; it stops burning", () =>
    Effect.gen(function* () {
      const agents = yield* launch("BROKE", "4", "5")
      yield* TestClock.adjust("2 hours")
      assert.strictEqual(yield* agents.accrue("BROKE"), 5n * UNIT)
      const agent = yield* agents.find("BROKE")
      assert.strictEqual(agent.status, "bankrupt")
      assert.strictEqual(agent.balance, 0n)
      assert.strictEqual(agent.totalCosts, 5n * UNIT)
      yield* TestClock.adjust("5 hours")
      assert.strictEqual(yield* agents.accrue("BROKE"), 0n)
      const [line] = yield* (yield* Chat).list({ limit: 1 })
      assert.strictEqual(line?.message_type, "system")
      assert.match(line?.message ?? "", /bankrupt/)
      assert.deepStrictEqual(yield* agents.burning, [])
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect("transitions: pause/resume/retire; a bankrupt agent resumes only with coin; retired is final", () =>
    Effect.gen(function* () {
      const agents = yield* launch("FLOW", "1", "0")
      assert.strictEqual((yield* agents.transition("FLOW", "pause")).status, "paused")
      assert.strictEqual((yield* Effect.flip(agents.transition("FLOW", "pause")))._tag, "InvalidTransition")
      assert.strictEqual((yield* agents.transition("FLOW", "resume")).status, "running")
      yield* TestClock.adjust(HOUR)
      yield* agents.accrue("FLOW") // nothing to pay with: bankrupt at once
      assert.strictEqual((yield* agents.find("FLOW")).status, "bankrupt")
      const refused = yield* Effect.flip(agents.transition("FLOW", "resume"))
      assert.strictEqual(refused._tag, "InvalidTransition")
      yield* (yield* Ledger).mint(agentAccount("FLOW"), toUnits("3"), "rescue")
      assert.strictEqual((yield* agents.transition("FLOW", "resume")).status, "running")
      // Costs restart from the resume: the hours spent bankrupt are not owed.
      yield* TestClock.adjust(HOUR)
      assert.strictEqual(yield* agents.accrue("FLOW"), UNIT)
      assert.strictEqual((yield* agents.transition("FLOW", "retire")).status, "retired")
      assert.strictEqual((yield* Effect.flip(agents.transition("FLOW", "resume")))._tag, "InvalidTransition")
      yield* TestClock.adjust(HOUR)
      assert.strictEqual(yield* agents.accrue("FLOW"), 0n)
    }).pipe(Effect.provide(MarketTest))
  )

  it.effect("paused agents keep burning; tickers are validated and unique", () =>
    Effect.gen(function* () {
      const agents = yield* launch("IDLE", "1", "10")
      yield* agents.transition("IDLE", "pause")
      yield* TestClock.adjust(HOUR)
      assert.strictEqual(yield* agents.accrue("IDLE"), UNIT)
      const taken = yield* Effect.flip(
        agents.create({ ticker: "IDLE", name: "x", description: "", burnRateHourly: 0n })
      )
      assert.strictEqual(taken._tag, "AgentExists")
      for (const ticker of ["x", "KEEL", "TOOLONGTICKER1", "9LIVES"]) {
        const bad = yield* Effect.flip(agents.create({ ticker, name: "x", description: "", burnRateHourly: 0n }))
        assert.strictEqual(bad._tag, "InvalidInput", ticker)
      }
    }).pipe(Effect.provide(MarketTest))
  )

  it.live(
    "trades and accruals of one ticker go through that agent's actor on the cluster runtime",
    () =>
      Effect.gen(function* () {
        yield* launch("ACTOR", "3600", "100") // one coin a second
        const actor = (yield* MarketAgent.client)("ACTOR")
        yield* Effect.sleep("50 millis")
        const charged = yield* actor.Accrue()
        assert.isAbove(Number(charged), 0)
        const wallet = "0x00000000000000000000000000000000000000aa"
        yield* (yield* Ledger).mint(`wallet:${wallet}`, 10n * UNIT, "funding")
        const outcomes = yield* Effect.all(
          Array.from({ length: 10 }, () =>
            actor.Trade({ side: "buy", ticker: "ACTOR", wallet, amount: UNIT / 2n, minimum: 0n })
          ),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(outcomes.filter((o) => o.receipt.success).length, 10)
        assert.isTrue((yield* (yield* Ledger).audit()).ok)
        // The actor trades its own token, whatever ticker an order names.
        const misrouted = yield* actor.Trade({ side: "buy", ticker: "OTHER", wallet, amount: UNIT, minimum: 0n })
        assert.isTrue(misrouted.receipt.success)
        assert.strictEqual(yield* (yield* Ledger).balance(`wallet:${wallet}`, "OTHER"), 0n)
      }).pipe(Effect.provide(AppTest())),
    30_000
  )
})
