import { Command, Options } from "@effect/cli"
import { Effect, ParseResult, Schema } from "effect"
import { ServicesLive } from "../layers/Live.js"
import { Ledger } from "../services/market/Ledger.js"
import { fromUnits, toUnits } from "../services/market/Units.js"
import { CommandFailed, emit, json } from "./Output.js"

const audit = Command.make("audit", { json }, ({ json }) =>
  Effect.gen(function* () {
    const report = yield* (yield* Ledger).audit()
    yield* emit(
      json,
      { ok: report.ok, entries: report.entries, coin_supply: fromUnits(report.coinSupply), problems: report.problems },
      (r) =>
        r.ok
          ? `ledger consistent: ${r.entries} entries, coin supply ${r.coin_supply}`
          : ["ledger INCONSISTENT:", ...r.problems.map((p) => `  ${p}`)].join("\n")
    )
    if (!report.ok) return yield* new CommandFailed({ detail: `${report.problems.length} ledger problem(s)` })
  })
).pipe(Command.withDescription("Recompute every balance from the journal and check the conservation invariant"))

/** A positive decimal coin amount (at most 9 decimals) to nano-units. */
const CoinAmountText = Schema.String.pipe(
  Schema.transformOrFail(Schema.BigIntFromSelf, {
    strict: true,
    decode: (text, _, ast) => {
      try {
        const units = toUnits(text)
        return units > 0n
          ? ParseResult.succeed(units)
          : ParseResult.fail(new ParseResult.Type(ast, text, `expected a positive amount (got "${text}")`))
      } catch {
        return ParseResult.fail(
          new ParseResult.Type(ast, text, `expected a decimal amount such as 12.5 (got "${text}")`)
        )
      }
    },
    encode: (units) => ParseResult.succeed(String(fromUnits(units)))
  })
)

const amount = Options.text("amount").pipe(
  Options.withSchema(CoinAmountText),
  Options.withDescription("Coin, as a decimal (at most 9 decimals)")
)

const mint = Command.make(
  "mint",
  {
    to: Options.text("to").pipe(Options.withDescription("The receiving account, e.g. wallet:0xabc…")),
    amount,
    reason: Options.text("reason").pipe(Options.withDescription("Why (kept in the journal)")),
    json
  },
  ({ amount, json, reason, to }) =>
    Effect.gen(function* () {
      const ledger = yield* Ledger
      const entry = yield* ledger
        .mint(to, amount, reason)
        .pipe(Effect.catchAll((e) => Effect.fail(new CommandFailed({ detail: e.detail }))))
      const balance = yield* ledger.balance(to, "COIN")
      yield* emit(
        json,
        { entry, to, amount: fromUnits(amount), balance: fromUnits(balance) },
        (r) => `minted ${r.amount} to ${r.to} (entry ${r.entry}); balance ${r.balance}`
      )
    })
).pipe(Command.withDescription("Mint platform coin into an account (journaled)"))

export const market = Command.make("market").pipe(
  Command.withDescription("The marketplace ledger (in progress: audit and coin minting)"),
  Command.withSubcommands([audit, Command.make("coin").pipe(Command.withSubcommands([mint]))]),
  Command.provide(ServicesLive)
)
