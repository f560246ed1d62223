import { Effect, Either } from "effect"
import { TradeSender } from "../../actors/MarketAgent.js"
import type { Principal } from "../../services/market/ApiKeys.js"
import { Forbidden } from "../../services/market/Errors.js"
import { tradeOrder } from "../../services/market/Trading.js"
import { jsonNumberTexts } from "../../services/platform/JsonNumbers.js"

/**
 * The caller must be the wallet named in the request (an API key of that wallet, or its signature). An
 * Either, so a handler can `yield*` it and the fast path can look at it without running anything.
 */
export const provenWallet = (
  principal: Principal | undefined,
  userId: string
): Either.Either<{ readonly wallet: string; readonly principal: Principal }, Forbidden> => {
  const wallet = userId.toLowerCase()
  if (principal?.kind !== "wallet")
    return Either.left(new Forbidden({ code: "WALLET_REQUIRED", detail: "this needs a wallet's key or signature" }))
  if (principal.address !== wallet)
    return Either.left(new Forbidden({ code: "WALLET_MISMATCH", detail: "user_id is not the authenticated wallet" }))
  return Either.right({ wallet, principal })
}

/** A buy or a sell as the two endpoints receive it, already decoded. */
export interface TradeInput {
  readonly side: "buy" | "sell"
  /** Upper case. */
  readonly ticker: string
  readonly amount: number
  readonly minimum: number | undefined
  /** The guard's field in the body (`min_tokens_out`, `min_coin_out`), for its decimal text. */
  readonly minimumField: string
  readonly fillOrKill?: boolean | undefined
  /** The Idempotency-Key header. */
  readonly key: string | undefined
}

/**
 * The ticker's actor places a proven wallet's trade (through `TradeSender`, with the trades sent alongside
 * it). `body` is the request body as sent: money is converted from the numbers' own decimal text. A full
 * queue is `Overloaded` — nothing was done — instead of a defect. Shared by the `HttpApi` endpoints and the
 * trade fast path.
 */
export const placeTrade = Effect.gen(function* () {
  const sender = yield* TradeSender
  return (wallet: string, principal: Principal, input: TradeInput, body: string) => {
    const texts = jsonNumberTexts(body)
    const order = tradeOrder({
      side: input.side,
      ticker: input.ticker,
      wallet,
      principal,
      amount: input.amount,
      minimum: input.minimum,
      amountText: texts.get("amount"),
      minimumText: texts.get(input.minimumField),
      fillOrKill: input.fillOrKill,
      idempotencyKey: input.key
    })
    return sender.place(input.ticker, order).pipe(
      // Logged by the actor; a 500 here (the problem middleware logs the request too).
      Effect.catchTag("ActorFailed", (failed) => Effect.die(failed))
    )
  }
})
