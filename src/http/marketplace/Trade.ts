import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Effect, Either } from "effect"
import { TradeSender } from "../../actors/MarketAgent.js"
import { Forbidden } from "../../contracts/market/Errors.js"
import { AMOUNT_TOO_LONG, MAX_AMOUNT_TEXT } from "../../contracts/market/Money.js"
import type { Principal } from "../../services/market/ApiKeys.js"
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
  /** A JSON number or a decimal string, as decoded. */
  readonly amount: number | string
  readonly minimum: number | string | undefined
  /** The guard's field in the body (`min_tokens_out`, `min_coin_out`), for its decimal text. */
  readonly minimumField: string
  readonly fillOrKill?: boolean | undefined
  /** The Idempotency-Key header. */
  readonly key: string | undefined
}

/**
 * The source text of a decoded number member (`undefined` for a string, whose value is its text): the body's
 * last member of that name, as `JSON.parse` reads it.
 */
const numberText = (texts: ReadonlyMap<string, string>, field: string, value: number | string | undefined) =>
  typeof value === "number" ? texts.get(field) : undefined

/**
 * A number written in more than `MAX_AMOUNT_TEXT` characters is refused as the schema refuses such a string
 * (400 VALIDATION_FAILED naming the member), before any of its digits is converted: the schema sees only the
 * double `JSON.parse` made of it, so its text is checked here, for the route and the fast path alike.
 */
const tooLong = (fields: ReadonlyArray<readonly [string, string | undefined]>) => {
  const field = fields.find(([, text]) => text !== undefined && text.length > MAX_AMOUNT_TEXT)?.[0]
  return field === undefined
    ? undefined
    : new HttpApiDecodeError({
        issues: [{ _tag: "Type", path: [field], message: AMOUNT_TOO_LONG }],
        message: `${field}: ${AMOUNT_TOO_LONG}`
      })
}

/**
 * The ticker's actor places a proven wallet's trade (through `TradeSender`, with the trades sent alongside
 * it). `body` is the request body as sent: money is converted from the numbers' own decimal text. A full
 * queue is `Overloaded` — nothing was done — instead of a defect. Shared by the `HttpApi` endpoints and the
 * trade fast path.
 */
export const placeTrade = Effect.gen(function* () {
  const sender = yield* TradeSender
  return (wallet: string, principal: Principal, input: TradeInput, body: string) =>
    Effect.gen(function* () {
      const texts = jsonNumberTexts(body)
      const amountText = numberText(texts, "amount", input.amount)
      const minimumText = numberText(texts, input.minimumField, input.minimum)
      const refused = tooLong([
        ["amount", amountText],
        [input.minimumField, minimumText]
      ])
      if (refused !== undefined) return yield* Effect.fail(refused)
      const order = tradeOrder({
        side: input.side,
        ticker: input.ticker,
        wallet,
        principal,
        amount: input.amount,
        minimum: input.minimum,
        amountText,
        minimumText,
        fillOrKill: input.fillOrKill,
        idempotencyKey: input.key
      })
      return yield* sender.place(input.ticker, order).pipe(
        // Logged by the actor; a 500 here (the problem middleware logs the request too).
        Effect.catchTag("ActorFailed", (failed) => Effect.die(failed))
      )
    })
})
