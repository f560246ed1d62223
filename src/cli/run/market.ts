import { Console, Effect, Option } from "effect"
import { type Agent, Agents, launchWarnings } from "../../services/market/Agents.js"
import { type ApiKeyInfo, ApiKeys } from "../../services/market/ApiKeys.js"
import { CoinIssuance } from "../../services/market/CoinIssuance.js"
import { CoinHistory } from "../../services/market/CoinPrice.js"
import { Ledger } from "../../services/market/Ledger.js"
import { fromUnits, unitsText } from "../../services/market/Units.js"
import { checksumAddress } from "../../services/market/WalletSignature.js"
import type { Parsed } from "../Lazy.js"
import type { createConfig, createKeyConfig, mintConfig, revokeKeyConfig, setPriceConfig } from "../market.js"
import { CommandFailed, emit, failWith, iso, table } from "../Output.js"

const keyJson = (info: ApiKeyInfo) => ({
  id: info.id,
  prefix: info.prefix,
  wallet: info.wallet === null ? null : checksumAddress(info.wallet),
  agent: info.agent,
  created_at: iso(info.createdAt),
  revoked_at: info.revokedAt === null ? null : iso(info.revokedAt)
})

const agentJson = (agent: Agent) => ({
  ticker: agent.ticker,
  instance_id: agent.instanceId,
  name: agent.name,
  status: agent.status,
  balance: fromUnits(agent.balance),
  balance_str: unitsText(agent.balance),
  burn_rate_hourly: fromUnits(agent.burnRateHourly),
  burn_rate_hourly_str: unitsText(agent.burnRateHourly),
  total_revenue: fromUnits(agent.totalRevenue),
  total_revenue_str: unitsText(agent.totalRevenue),
  total_costs: fromUnits(agent.totalCosts),
  total_costs_str: unitsText(agent.totalCosts),
  created_at: iso(agent.createdAt)
})

export const audit = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const report = yield* (yield* Ledger).audit()
    yield* emit(
      json,
      {
        ok: report.ok,
        entries: report.entries,
        coin_supply: fromUnits(report.coinSupply),
        coin_supply_str: unitsText(report.coinSupply),
        problems: report.problems
      },
      (r) =>
        r.ok
          ? `ledger consistent: ${r.entries} entries, coin supply ${r.coin_supply_str}`
          : ["ledger INCONSISTENT:", ...r.problems.map((p) => `  ${p}`)].join("\n")
    )
    if (!report.ok) return yield* new CommandFailed({ detail: `${report.problems.length} ledger problem(s)` })
  })

export const mint = ({ amount, json, reason, to }: Parsed<typeof mintConfig>) =>
  Effect.gen(function* () {
    const minted = yield* (yield* CoinIssuance).mintTo(to, amount, reason).pipe(Effect.catchAll(failWith(json)))
    yield* emit(
      json,
      {
        entry: minted.entry,
        to: minted.account,
        amount: fromUnits(minted.amount),
        amount_str: unitsText(minted.amount),
        balance: fromUnits(minted.balance),
        balance_str: unitsText(minted.balance)
      },
      (r) => `minted ${r.amount_str} to ${r.to} (entry ${r.entry}); balance ${r.balance_str}`
    )
  })

export const setPrice = ({ json, price }: Parsed<typeof setPriceConfig>) =>
  Effect.gen(function* () {
    yield* (yield* CoinHistory).setPrice(price).pipe(Effect.catchAll(failWith(json)))
    yield* emit(
      json,
      { price: fromUnits(price), price_str: unitsText(price) },
      (r) => `coin price set to ${r.price_str}`
    )
  })

export const create = ({ burnRate, description, json, name, ticker }: Parsed<typeof createConfig>) =>
  Effect.gen(function* () {
    const agent = yield* (yield* Agents)
      .create({ ticker, name, description, burnRateHourly: burnRate })
      .pipe(Effect.catchAll(failWith(json)))
    const { info, key } = yield* (yield* ApiKeys).create({ agent: agent.ticker }).pipe(Effect.catchAll(failWith(json)))
    const warnings = launchWarnings(agent)
    // On stderr whatever the output: stdout stays the answer (and, with --json, one document holding them too).
    for (const warning of warnings) yield* Console.error(`warning: ${warning.detail}`)
    yield* emit(
      json,
      { agent: agentJson(agent), api_key: key, api_key_id: info.id, warnings },
      (r) =>
        `launched ${r.agent.ticker} (${r.agent.name}); its API key, shown only now:\n  ${r.api_key}\n(key id ${r.api_key_id})`
    )
  })

export const listAgents = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const agents = yield* (yield* Agents).list({ limit: 10_000, offset: 0 })
    yield* emit(json, agents.map(agentJson), (rows) =>
      table(
        ["TICKER", "NAME", "STATUS", "BALANCE", "BURN/H"],
        rows.map((a) => [a.ticker, a.name, a.status, a.balance_str, a.burn_rate_hourly_str])
      )
    )
  })

export const createKey = ({ agent, json, wallet }: Parsed<typeof createKeyConfig>) =>
  Effect.gen(function* () {
    const { info, key } = yield* (yield* ApiKeys)
      .create({
        ...(Option.isSome(wallet) ? { wallet: wallet.value } : {}),
        ...(Option.isSome(agent) ? { agent: agent.value.toUpperCase() } : {})
      })
      .pipe(Effect.catchAll(failWith(json)))
    yield* emit(
      json,
      { ...keyJson(info), api_key: key },
      (r) => `API key ${r.id} for ${r.wallet ?? r.agent}, shown only now:\n  ${r.api_key}`
    )
  })

export const listKeys = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const keys = yield* (yield* ApiKeys).list
    yield* emit(json, keys.map(keyJson), (rows) =>
      table(
        ["ID", "PREFIX", "FOR", "CREATED", "REVOKED"],
        rows.map((k) => [k.id, `${k.prefix}…`, k.wallet ?? `agent ${k.agent}`, k.created_at, k.revoked_at ?? "-"])
      )
    )
  })

export const revokeKey = ({ json, key }: Parsed<typeof revokeKeyConfig>) =>
  Effect.gen(function* () {
    const revoked = yield* (yield* ApiKeys).revoke(key).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, revoked.map(keyJson), (rows) => rows.map((k) => `revoked ${k.id} (${k.prefix}…)`).join("\n"))
  })

export const transition = (
  action: "pause" | "resume" | "retire",
  { json, ticker }: { readonly json: boolean; readonly ticker: string }
) =>
  Effect.gen(function* () {
    const agent = yield* (yield* Agents).transition(ticker.toUpperCase(), action).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, agentJson(agent), (r) => `${r.ticker} is ${r.status}`)
  })
