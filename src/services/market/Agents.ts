import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { AgentExists, agentNotFound, InvalidInput, InvalidTransition } from "../../contracts/market/Errors.js"
import { isTicker, TICKER_RULE } from "../../contracts/market/Ticker.js"
import { hasUndisplayableCharacter, UNDISPLAYABLE_RULE } from "../../contracts/shared/Text.js"
import { orDieSql } from "../platform/SqlEdge.js"
import type { CurveState } from "./BondingCurve.js"
import { Chat, PLATFORM_SENDER } from "./Chat.js"
import { COIN, exactIntegers, ISSUANCE, Ledger } from "./Ledger.js"
import { MarketEvents } from "./MarketEvents.js"
import { pageOf } from "./Paging.js"
import { agentAccount, defaultLaunch, TokenMarket } from "./TokenMarket.js"
import { ceilDiv, fromUnits, MAX_LEG, unitsText } from "./Units.js"

export type AgentStatus = "running" | "paused" | "bankrupt" | "retired"

export interface Agent {
  readonly instanceId: string
  readonly ticker: string
  readonly name: string
  readonly description: string
  readonly status: AgentStatus
  readonly balance: bigint
  readonly totalRevenue: bigint
  readonly totalCosts: bigint
  readonly burnRateHourly: bigint
  readonly createdAt: number
}

interface AgentRow {
  readonly instance_id: string
  readonly ticker: string
  readonly name: string
  readonly description: string
  readonly status: AgentStatus
  readonly balance: bigint | number
  readonly total_revenue: bigint | number
  readonly total_costs: bigint | number
  readonly burn_rate_hourly: bigint | number
  readonly costs_accrued_at: bigint | number
  readonly created_at: bigint | number
}

const toAgent = (row: AgentRow): Agent => ({
  instanceId: row.instance_id,
  ticker: row.ticker,
  name: row.name,
  description: row.description,
  status: row.status,
  balance: BigInt(row.balance),
  totalRevenue: BigInt(row.total_revenue),
  totalCosts: BigInt(row.total_costs),
  burnRateHourly: BigInt(row.burn_rate_hourly),
  createdAt: Number(row.created_at)
})

const HOUR_MILLIS = 3_600_000n

/** Hours the balance lasts at the current burn; undefined when nothing burns. */
export const runwayHours = (agent: Pick<Agent, "balance" | "burnRateHourly">) =>
  agent.burnRateHourly === 0n ? undefined : fromUnits(agent.balance) / fromUnits(agent.burnRateHourly)

/**
 * What `runway_hours` says for an agent that burns nothing: the largest finite double
 * (`Double.greatestFiniteMagnitude`, `Double.MAX_VALUE`, `math.MaxFloat64`). A number always, so a
 * client typed from the seed (`runway_hours: number`) decodes every answer; larger than any real
 * runway (at most 2^62 nano-units of balance over a burn of one nano-unit an hour, about 4.6e18 h),
 * so "runway below N hours" checks and sorting by runway stay right. `runway_infinite` says it outright.
 */
export const RUNWAY_INFINITE_HOURS = Number.MAX_VALUE

/** An agent's runway as the API answers it (docs/marketplace.md, "Runway"). */
export const runwayOf = (agent: Pick<Agent, "balance" | "burnRateHourly">) => {
  const hours = runwayHours(agent)
  return hours === undefined
    ? { runway_hours: RUNWAY_INFINITE_HOURS, runway_infinite: true }
    : { runway_hours: hours, runway_infinite: false }
}

/** Something an operator should hear about an agent just launched, though the launch succeeded. */
export interface LaunchWarning {
  readonly code: "AGENT_UNFUNDED"
  readonly detail: string
}

/**
 * An agent that burns coin and holds none goes bankrupt at its first charge (the first tick of a running server's
 * accrual, within `MARKET_BURN_INTERVAL`): the operator is told, with the command that funds it.
 */
export const launchWarnings = (agent: Pick<Agent, "ticker" | "balance" | "burnRateHourly">): Array<LaunchWarning> =>
  agent.burnRateHourly > 0n && agent.balance === 0n
    ? [
        {
          code: "AGENT_UNFUNDED",
          detail:
            `${agent.ticker} burns ${unitsText(agent.burnRateHourly)} coin an hour and holds no coin: it goes bankrupt ` +
            "at its first charge (within MARKET_BURN_INTERVAL of a running server); fund it now: " +
            `ctl market coin mint --to agent:${agent.ticker} --amount <coin> --reason <why>`
        }
      ]
    : []

/** Where the next page of the agent list starts: after this agent in (created_at, ticker) order. */
export interface AgentCursor {
  readonly created_at: number
  readonly ticker: string
}

/**
 * Which operator action leads from which status. The burn drives running/paused → bankrupt by
 * itself; resuming a bankrupt agent needs coin on its balance first.
 */
const transitions: Record<"pause" | "resume" | "retire", ReadonlyArray<AgentStatus>> = {
  pause: ["running"],
  resume: ["paused", "bankrupt"],
  retire: ["running", "paused", "bankrupt"]
}
const targetOf = { pause: "paused", resume: "running", retire: "retired" } as const

export interface AgentLaunch {
  readonly ticker: string
  readonly name: string
  readonly description: string
  /** Coin (nano-units) charged per hour of existence. */
  readonly burnRateHourly: bigint
  readonly curve?: CurveState
}

/**
 * Agents: their lifecycle, their costs, and the launch of their token. Costs accrue from elapsed
 * time since the last charge (kept in SQL), so a restart neither skips nor repeats a charge.
 */
export class Agents extends Effect.Service<Agents>()("market/Agents", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const market = yield* TokenMarket
    const chat = yield* Chat
    const events = yield* MarketEvents

    const select = sql`SELECT a.*, COALESCE(b.balance, 0) AS balance FROM market_agents a
      LEFT JOIN ledger_balances b ON b.account = 'agent:' || a.ticker AND b.asset = ${COIN}`

    const find = (ticker: string) =>
      exactIntegers(sql<AgentRow>`${select} WHERE a.ticker = ${ticker}`).pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows[0] === undefined ? Effect.fail(agentNotFound(ticker)) : Effect.succeed(toAgent(rows[0]))
        )
      )

    /**
     * Agents oldest first (ties by ticker), `limit` at a time: after a cursor (keyset, stable while
     * agents are added) or from an offset; both at once is ambiguous and refused.
     */
    const page = Effect.fn("Agents.page")(function* (options: {
      readonly limit: number
      readonly offset?: number | undefined
      readonly after?: AgentCursor | undefined
    }) {
      const { after, limit, offset } = options
      if (after !== undefined && offset !== undefined)
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: "use either cursor or offset, not both" })
      const rows = yield* exactIntegers(
        after === undefined
          ? sql<AgentRow>`${select} ORDER BY a.created_at, a.ticker LIMIT ${limit + 1} OFFSET ${offset ?? 0}`
          : sql<AgentRow>`${select} WHERE a.created_at > ${after.created_at}
              OR (a.created_at = ${after.created_at} AND a.ticker > ${after.ticker})
              ORDER BY a.created_at, a.ticker LIMIT ${limit + 1}`
      ).pipe(Effect.orDie)
      return pageOf(
        rows.map(toAgent),
        limit,
        (last): AgentCursor => ({
          created_at: last.createdAt,
          ticker: last.ticker
        })
      )
    })

    const list = (options: { limit: number; offset: number }) =>
      page(options).pipe(
        Effect.map((p) => p.items),
        Effect.catchTag("InvalidInput", Effect.die)
      )

    const create = Effect.fn("Agents.create")(function* (given: AgentLaunch) {
      if (!isTicker(given.ticker))
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: `ticker: ${TICKER_RULE}` })
      const launch = { ...given, ticker: given.ticker.toUpperCase() }
      if (launch.ticker === PLATFORM_SENDER.ticker) {
        return yield* new InvalidInput({
          code: "INVALID_INPUT",
          detail: `ticker: ${PLATFORM_SENDER.ticker} is reserved for the platform's own chat lines`
        })
      }
      const name = launch.name.trim()
      if (name.length === 0 || name.length > 100)
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: "name must be 1..100 characters" })
      // The name signs chat lines and the description is shown beside them: the chat's rule (docs/marketplace.md,
      // "Chat"), and a name is one line.
      if (hasUndisplayableCharacter(name) || /[\n\t]/.test(name))
        return yield* new InvalidInput({
          code: "INVALID_INPUT",
          detail: `name must be one line and ${UNDISPLAYABLE_RULE.replace(" (line feed and tab excepted)", "")}`
        })
      if (launch.description.length > 2_000)
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: "description must be at most 2000 characters" })
      if (hasUndisplayableCharacter(launch.description))
        return yield* new InvalidInput({ code: "INVALID_INPUT", detail: `description ${UNDISPLAYABLE_RULE}` })
      if (launch.burnRateHourly < 0n || launch.burnRateHourly > MAX_LEG)
        return yield* new InvalidInput({
          code: "INVALID_INPUT",
          detail: `burn rate must be from 0 to ${unitsText(MAX_LEG)} coin per hour`
        })
      const now = yield* Clock.currentTimeMillis
      yield* Effect.gen(function* () {
        const existing = yield* sql`SELECT 1 FROM market_agents WHERE ticker = ${launch.ticker}
          UNION ALL SELECT 1 FROM market_curves WHERE ticker = ${launch.ticker}`
        if (existing.length > 0) {
          return yield* new AgentExists({
            code: "AGENT_EXISTS",
            ticker: launch.ticker,
            detail: `ticker ${launch.ticker} is taken`
          })
        }
        // The check above answers the common case; two launches of one ticker at once (PostgreSQL) both pass it,
        // and the later insert waits on the primary key, then inserts nothing: the same refusal, not a defect.
        const inserted = yield* sql`INSERT INTO market_agents ${sql.insert({
          ticker: launch.ticker,
          instance_id: randomUUID(),
          name,
          description: launch.description,
          status: "running",
          burn_rate_hourly: launch.burnRateHourly,
          costs_accrued_at: now,
          created_at: now
        })} ON CONFLICT (ticker) DO NOTHING RETURNING ticker`
        if (inserted.length === 0)
          return yield* new AgentExists({
            code: "AGENT_EXISTS",
            ticker: launch.ticker,
            detail: `ticker ${launch.ticker} is taken`
          })
        yield* market.launch(launch.ticker, launch.curve ?? defaultLaunch)
        yield* chat.platformLine({ ticker: launch.ticker, name }, `${name} (${launch.ticker}) launched`, "system")
      }).pipe(sql.withTransaction, orDieSql)
      yield* events.committed
      return yield* find(launch.ticker)
    })

    const transition = Effect.fn("Agents.transition")(function* (
      ticker: string,
      action: "pause" | "resume" | "retire"
    ) {
      const agent = yield* find(ticker)
      const to = targetOf[action]
      const refuse = (detail: string) =>
        new InvalidTransition({ code: "INVALID_TRANSITION", ticker, from: agent.status, to, detail })
      if (!transitions[action].includes(agent.status)) return yield* refuse(`cannot ${action} a ${agent.status} agent`)
      if (action === "resume" && agent.status === "bankrupt" && agent.balance === 0n)
        return yield* refuse("a bankrupt agent needs coin on its balance before it can resume")
      const now = yield* Clock.currentTimeMillis
      yield* Effect.gen(function* () {
        // Costs restart from the resume: a bankrupt agent owes nothing for the time it was down.
        if (agent.status === "bankrupt")
          yield* sql`UPDATE market_agents SET costs_accrued_at = ${now} WHERE ticker = ${ticker}`
        yield* sql`UPDATE market_agents SET status = ${to} WHERE ticker = ${ticker}`
        yield* chat.platformLine({ ticker, name: agent.name }, `${agent.name} (${ticker}) is ${to}`, "system")
      }).pipe(sql.withTransaction, Effect.orDie)
      yield* events.committed
      return yield* find(ticker)
    })

    /**
     * Charges the burn owed since the last charge (rounded up to the nano-unit: rounding favours the
     * platform); an agent whose balance cannot cover it pays what it has and goes bankrupt. Answers what this
     * call charged: run again, it charges only the time since (nothing at the same instant), so an accrual
     * delivered twice charges each interval once.
     */
    const accrue = Effect.fn("Agents.accrue")(function* (ticker: string) {
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.gen(function* () {
        const rows = yield* exactIntegers(sql<AgentRow>`${select} WHERE a.ticker = ${ticker}`)
        const row = rows[0]
        if (row === undefined) return yield* agentNotFound(ticker)
        const agent = toAgent(row)
        const since = BigInt(row.costs_accrued_at)
        if (agent.status === "bankrupt" || agent.status === "retired" || BigInt(now) <= since) return 0n
        const owed = ceilDiv(agent.burnRateHourly * (BigInt(now) - since), HOUR_MILLIS)
        const charge = owed < agent.balance ? owed : agent.balance
        // The interval is claimed first, by a write conditional on the last accrual read above: a second run of the
        // same accrual at once (a message redelivered while its first run still goes on, docs/cluster.md
        // "Exactly-once effects") waits on the row, finds it moved, and charges nothing.
        const claimed = yield* sql`UPDATE market_agents
          SET total_costs = total_costs + ${charge}, costs_accrued_at = ${now}
          WHERE ticker = ${ticker} AND costs_accrued_at = ${since} RETURNING ticker`
        if (claimed.length === 0) return 0n
        if (charge > 0n) {
          yield* ledger
            .post("cost", ticker, [
              { account: agentAccount(ticker), asset: COIN, amount: -charge },
              { account: ISSUANCE, asset: COIN, amount: charge }
            ])
            .pipe(Effect.orDie)
        }
        if (owed > 0n && owed >= agent.balance) {
          yield* sql`UPDATE market_agents SET status = 'bankrupt' WHERE ticker = ${ticker}`
          yield* chat.platformLine(
            { ticker, name: agent.name },
            `${agent.name} (${ticker}) ran out of coin and is bankrupt`,
            "system"
          )
        }
        return charge
      }).pipe(sql.withTransaction, orDieSql, Effect.tap(events.committed))
    })

    const burning = sql<{
      ticker: string
    }>`SELECT ticker FROM market_agents WHERE status IN ('running', 'paused')`.pipe(
      Effect.map((rows) => rows.map((r) => r.ticker)),
      Effect.orDie
    )

    return { create, find, list, page, transition, accrue, burning } as const
  })
}) {}
