import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"
import { AMOUNT_TOO_LONG, MAX_AMOUNT_TEXT } from "../contracts/market/Money.js"
import { TREASURY } from "../services/market/Accounts.js"
import { AmountTooLarge, canonicalDecimal, MAX_LEG, toUnits, unitsText } from "../services/market/Units.js"
import { MarketLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/market.js"))

const audit = Command.make("audit", { json }, (args) => impl((m) => m.audit(args))).pipe(
  Command.withDescription("Recompute every balance from the journal and check the conservation invariant")
)

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

export const mintConfig = {
  to: Options.text("to").pipe(Options.withDescription(`A wallet address (0x…), agent:TICKER or ${TREASURY}`)),
  amount: amountOption("amount", "positive").pipe(
    Options.withDescription("Coin, as a decimal (rounded down to 9 decimals)")
  ),
  reason: Options.text("reason").pipe(Options.withDescription("Why (kept in the journal)")),
  json
}

const mint = Command.make("mint", mintConfig, (args) => impl((m) => m.mint(args))).pipe(
  Command.withDescription("Mint platform coin into a wallet or account (journaled)")
)

export const setPriceConfig = {
  price: amountOption("price", "positive").pipe(
    Options.withDescription("The coin's price in the reference currency (more than 0)")
  ),
  json
}

const setPrice = Command.make("set-price", setPriceConfig, (args) => impl((m) => m.setPrice(args))).pipe(
  Command.withDescription("Set the coin's price (recorded as a point of its history)")
)

const ticker = Args.text({ name: "TICKER" }).pipe(Args.withDescription("The agent's ticker"))

export const createConfig = {
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
}

const create = Command.make("create", createConfig, (args) => impl((m) => m.create(args))).pipe(
  Command.withDescription("Launch an agent with its token, and print its API key once")
)

const transition = (action: "pause" | "resume" | "retire", description: string) =>
  Command.make(action, { ticker, json }, (args) => impl((m) => m.transition(action, args))).pipe(
    Command.withDescription(description)
  )

const listAgents = Command.make("list", { json }, (args) => impl((m) => m.listAgents(args))).pipe(
  Command.withDescription("List agents")
)

export const createKeyConfig = {
  wallet: Options.text("wallet").pipe(Options.optional, Options.withDescription("The wallet (0x…) the key acts for")),
  agent: Options.text("agent").pipe(Options.optional, Options.withDescription("The agent (TICKER) the key acts for")),
  json
}

const createKey = Command.make("create", createKeyConfig, (args) => impl((m) => m.createKey(args))).pipe(
  Command.withDescription("Create an API key for a wallet or an agent; the key is printed once")
)

const listKeys = Command.make("list", { json }, (args) => impl((m) => m.listKeys(args))).pipe(
  Command.withDescription("List API keys (prefixes only: keys are stored hashed)")
)

export const revokeKeyConfig = { key: Args.text({ name: "ID_OR_PREFIX" }), json }

const revokeKey = Command.make("revoke", revokeKeyConfig, (args) => impl((m) => m.revokeKey(args))).pipe(
  Command.withDescription("Revoke an API key by id or prefix; it is refused from its next request on")
)

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
  Command.provide(MarketLive)
)
