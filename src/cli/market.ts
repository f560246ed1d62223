import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { AMOUNT_TOO_LONG, MAX_AMOUNT_TEXT } from "../contracts/market/Money.js"
import { ServicesLive } from "../layers/Live.js"
import { type Agent, Agents, launchWarnings } from "../services/market/Agents.js"
import { type ApiKeyInfo, ApiKeys } from "../services/market/ApiKeys.js"
import { CoinIssuance } from "../services/market/CoinIssuance.js"
import { CoinHistory } from "../services/market/CoinPrice.js"
import { Ledger, MAX_LEG } from "../services/market/Ledger.js"
import { TREASURY } from "../services/market/TokenMarket.js"
import { AmountTooLarge, canonicalDecimal, fromUnits, toUnits, unitsText } from "../services/market/Units.js"
import { checksumAddress } from "../services/market/WalletSignature.js"
import { CommandFailed, emit, failWith, iso, json, table } from "./Output.js"

const audit = Command.make("audit", { json }, ({ json }) =>
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
).pipe(Command.withDescription("Recompute every balance from the journal and check the conservation invariant"))

/**
 * A coin amount option (a decimal, at most 9 decimals, exponent allowed) in nano-units. A bad one is a usage
 * error in one line naming the option; digits past the ninth decimal are rounded down, and an amount that
 * rounds to nothing is refused rather than stored as 0.
 */
const amountOption = (name: string, least: "positive" | "zero") =>
  Options.text(name).pipe(
    Options.mapEffect((text) => {
      const refuse = (why: string) => Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${why}`)))
      const tooLarge = `must be at most ${unitsText(MAX_LEG)}, the most the ledger holds`
      // Before any digit is converted, as the API bounds an amount's text.
      if (text.trim().length > MAX_AMOUNT_TEXT) return refuse(AMOUNT_TOO_LONG)
      let units: bigint
      try {
        units = toUnits(text)
      } catch (error) {
        if (error instanceof AmountTooLarge) return refuse(tooLarge)
        return refuse("expected a decimal amount such as 12.5 (digits past the ninth decimal are rounded down)")
      }
      if (units < 0n || (least === "positive" && units === 0n && canonicalDecimal(text) === "0"))
        return refuse(least === "positive" ? "must be more than 0" : "must not be negative")
      if (units === 0n && canonicalDecimal(text) !== "0")
        return refuse(`is below the smallest amount, ${unitsText(1n)}`)
      if (units > MAX_LEG) return refuse(tooLarge)
      return Effect.succeed(units)
    })
  )

const mint = Command.make(
  "mint",
  {
    to: Options.text("to").pipe(Options.withDescription(`A wallet address (0x…), agent:TICKER or ${TREASURY}`)),
    amount: amountOption("amount", "positive").pipe(
      Options.withDescription("Coin, as a decimal (rounded down to 9 decimals)")
    ),
    reason: Options.text("reason").pipe(Options.withDescription("Why (kept in the journal)")),
    json
  },
  ({ amount, json, reason, to }) =>
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
).pipe(Command.withDescription("Mint platform coin into a wallet or account (journaled)"))

const setPrice = Command.make(
  "set-price",
  {
    price: amountOption("price", "positive").pipe(
      Options.withDescription("The coin's price in the reference currency (more than 0)")
    ),
    json
  },
  ({ json, price }) =>
    Effect.gen(function* () {
      yield* (yield* CoinHistory).setPrice(price).pipe(Effect.catchAll(failWith(json)))
      yield* emit(
        json,
        { price: fromUnits(price), price_str: unitsText(price) },
        (r) => `coin price set to ${r.price_str}`
      )
    })
).pipe(Command.withDescription("Set the coin's price (recorded as a point of its history)"))

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

const ticker = Args.text({ name: "TICKER" }).pipe(Args.withDescription("The agent's ticker"))

const create = Command.make(
  "create",
  {
    ticker: Options.text("ticker").pipe(
      Options.withDescription("2 to 10 letters or digits, starting with a letter (any case; stored upper case)")
    ),
    name: Options.text("name"),
    description: Options.text("description").pipe(Options.withDefault("")),
    burnRate: amountOption("burn-rate", "zero").pipe(
      Options.withDefault(0n),
      Options.withDescription("Coin charged per hour (default 0); fund the agent before its first charge")
    ),
    json
  },
  ({ burnRate, description, json, name, ticker }) =>
    Effect.gen(function* () {
      const agent = yield* (yield* Agents)
        .create({ ticker, name, description, burnRateHourly: burnRate })
        .pipe(Effect.catchAll(failWith(json)))
      const { info, key } = yield* (yield* ApiKeys)
        .create({ agent: agent.ticker })
        .pipe(Effect.catchAll(failWith(json)))
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
).pipe(Command.withDescription("Launch an agent with its token, and print its API key once"))

const transition = (action: "pause" | "resume" | "retire", description: string) =>
  Command.make(action, { ticker, json }, ({ json, ticker }) =>
    Effect.gen(function* () {
      const agent = yield* (yield* Agents)
        .transition(ticker.toUpperCase(), action)
        .pipe(Effect.catchAll(failWith(json)))
      yield* emit(json, agentJson(agent), (r) => `${r.ticker} is ${r.status}`)
    })
  ).pipe(Command.withDescription(description))

const listAgents = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function* () {
    const agents = yield* (yield* Agents).list({ limit: 10_000, offset: 0 })
    yield* emit(json, agents.map(agentJson), (rows) =>
      table(
        ["TICKER", "NAME", "STATUS", "BALANCE", "BURN/H"],
        rows.map((a) => [a.ticker, a.name, a.status, a.balance_str, a.burn_rate_hourly_str])
      )
    )
  })
).pipe(Command.withDescription("List agents"))

const keyJson = (info: ApiKeyInfo) => ({
  id: info.id,
  prefix: info.prefix,
  wallet: info.wallet === null ? null : checksumAddress(info.wallet),
  agent: info.agent,
  created_at: iso(info.createdAt),
  revoked_at: info.revokedAt === null ? null : iso(info.revokedAt)
})

const createKey = Command.make(
  "create",
  {
    wallet: Options.text("wallet").pipe(Options.optional, Options.withDescription("The wallet (0x…) the key acts for")),
    agent: Options.text("agent").pipe(Options.optional, Options.withDescription("The agent (TICKER) the key acts for")),
    json
  },
  ({ agent, json, wallet }) =>
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
).pipe(Command.withDescription("Create an API key for a wallet or an agent; the key is printed once"))

const listKeys = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function* () {
    const keys = yield* (yield* ApiKeys).list
    yield* emit(json, keys.map(keyJson), (rows) =>
      table(
        ["ID", "PREFIX", "FOR", "CREATED", "REVOKED"],
        rows.map((k) => [k.id, `${k.prefix}…`, k.wallet ?? `agent ${k.agent}`, k.created_at, k.revoked_at ?? "-"])
      )
    )
  })
).pipe(Command.withDescription("List API keys (prefixes only: keys are stored hashed)"))

const revokeKey = Command.make("revoke", { key: Args.text({ name: "ID_OR_PREFIX" }), json }, ({ json, key }) =>
  Effect.gen(function* () {
    const revoked = yield* (yield* ApiKeys).revoke(key).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, revoked.map(keyJson), (rows) => rows.map((k) => `revoked ${k.id} (${k.prefix}…)`).join("\n"))
  })
).pipe(Command.withDescription("Revoke an API key by id or prefix; it is refused from its next request on"))

export const market = Command.make("market").pipe(
  Command.withDescription("The agent marketplace: agents, API keys, the coin and its ledger"),
  Command.withSubcommands([
    audit,
    Command.make("agent").pipe(
      Command.withDescription("Launch agents and drive their status"),
      Command.withSubcommands([
        create,
        listAgents,
        transition("pause", "Pause an agent: its token stops trading (its costs keep accruing)"),
        transition("resume", "Resume a paused agent, or a bankrupt one whose balance was refilled"),
        transition("retire", "Retire an agent for good: no trading, no chat, no costs")
      ])
    ),
    Command.make("keys").pipe(
      Command.withDescription("API keys for wallets and agents"),
      Command.withSubcommands([createKey, listKeys, revokeKey])
    ),
    Command.make("coin").pipe(Command.withDescription("The platform coin"), Command.withSubcommands([mint, setPrice]))
  ]),
  Command.provide(ServicesLive)
)
