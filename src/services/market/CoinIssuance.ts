import { Effect, Schema } from "effect"
import { isTicker, TICKER_RULE } from "../../contracts/market/Ticker.js"
import { TREASURY } from "./Accounts.js"
import { Agents } from "./Agents.js"
import { COIN, displayAccount, Ledger } from "./Ledger.js"
import { walletAccount } from "./TokenMarket.js"
import { isAddress } from "./WalletSignature.js"

export class MintRefused extends Schema.TaggedError<MintRefused>()("MintRefused", {
  code: Schema.Literal("MINT_REFUSED"),
  detail: Schema.String
}) {}

export interface Minted {
  /** The journal entry that carries the mint. */
  readonly entry: number
  /** The account credited, as clients see it (a wallet in EIP-55 form). */
  readonly account: string
  readonly amount: bigint
  /** The account's coin balance after the mint. */
  readonly balance: bigint
}

/**
 * New platform coin, by an operator's decision. Coin goes only where someone can use it — a wallet, an
 * agent that exists, or the treasury — and always with a reason, which the journal keeps: a mint into
 * `system:…`, a curve's reserve or a typo'd account would create coin no one can spend or audit the use of.
 */
export class CoinIssuance extends Effect.Service<CoinIssuance>()("market/CoinIssuance", {
  effect: Effect.gen(function* () {
    const ledger = yield* Ledger
    const agents = yield* Agents

    /** `to` is a wallet address (`0x…`), `wallet:0x…`, `agent:TICKER` or the treasury account. */
    const mintTo = Effect.fn("CoinIssuance.mintTo")(function* (to: string, amount: bigint, reason: string) {
      const target = to.trim()
      const address = target.startsWith("wallet:") ? target.slice("wallet:".length) : target
      // Tickers are upper case; like the API's paths, `agent:sage` names SAGE, and one rule refuses a malformed one.
      const named = target.startsWith("agent:") && target.length > "agent:".length ? target.slice(6) : undefined
      if (named !== undefined && !isTicker(named))
        return yield* new MintRefused({ code: "MINT_REFUSED", detail: `agent:${named}: the ticker ${TICKER_RULE}` })
      const ticker = named?.toUpperCase()
      const account = isAddress(address) ? walletAccount(address) : ticker !== undefined ? `agent:${ticker}` : target
      if (!(isAddress(address) || ticker !== undefined || account === TREASURY))
        return yield* new MintRefused({
          code: "MINT_REFUSED",
          detail: `the recipient must be a wallet address (0x…), agent:TICKER or ${TREASURY}`
        })
      if (ticker !== undefined) yield* agents.find(ticker)
      if (reason.trim() === "") return yield* new MintRefused({ code: "MINT_REFUSED", detail: "a mint must say why" })
      if (amount <= 0n) return yield* new MintRefused({ code: "MINT_REFUSED", detail: "the amount must be positive" })
      const entry = yield* ledger
        .mint(account, amount, reason)
        .pipe(Effect.catchAll((e) => new MintRefused({ code: "MINT_REFUSED", detail: e.detail })))
      const balance = yield* ledger.balance(account, COIN)
      return { entry, account: displayAccount(account), amount, balance } satisfies Minted
    })

    return { mintTo } as const
  })
}) {}
