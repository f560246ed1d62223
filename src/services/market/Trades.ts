import { randomBytes } from "node:crypto"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { Effect, Either } from "effect"
import { Forbidden } from "../../contracts/market/Errors.js"
import type { TradeOrder } from "../../contracts/market/MarketAgent.js"
import {
  AMOUNT_TOO_LONG,
  type DecimalInput,
  decimalValueOf,
  MAX_AMOUNT_TEXT,
  numberTextOf
} from "../../contracts/market/Money.js"
import type { Principal } from "../../contracts/market/Principal.js"
import { clusterSettings } from "../platform/ClusterConfig.js"
import { sha256Hex } from "../platform/Digest.js"
import { principalId } from "./ApiKeys.js"
import { TradeSender } from "./TradeSender.js"
import { canonicalDecimal, toUnits } from "./Units.js"

/**
 * The caller must be the wallet named in the request (an API key of that wallet, or its signature). An
 * Either, so a caller can `yield*` it and the trade fast path can look at it without running anything.
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

/** A buy or a sell as the two endpoints receive it, already decoded by the contract. */
export interface TradeRequest {
  readonly side: "buy" | "sell"
  /** As sent, any case (the contract checked the ticker rule). */
  readonly ticker: string
  /** The wallet the trade is for: the caller must prove it. */
  readonly userId: string
  /** As the contract decodes it: a decimal string, or a JSON number (with its decimal text when the body's was kept). */
  readonly amount: DecimalInput
  /** min_tokens_out (buy) or min_coin_out (sell). */
  readonly minimum: DecimalInput | undefined
  readonly fillOrKill?: boolean | undefined
  /** The Idempotency-Key header. */
  readonly idempotencyKey: string | undefined
}

/** The body member that holds a side's guard. */
const minimumField = (side: "buy" | "sell") => (side === "buy" ? "min_tokens_out" : "min_coin_out")

/**
 * A number written in more than `MAX_AMOUNT_TEXT` characters is refused as the schema refuses such a string
 * (400 VALIDATION_FAILED naming the member), before any of its digits is converted. The schema holds a string to
 * that length; a number's text is held to it here, after the wallet rule (a stranger's trade is 403 whatever
 * its amount), for the route and the fast path alike.
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

/** What a proven wallet asks for, in the API's units, with the JSON numbers' own decimal text when they were numbers. */
interface OrderInput {
  readonly side: "buy" | "sell"
  /** Upper case. */
  readonly ticker: string
  /** Lowercase 0x address. */
  readonly wallet: string
  readonly principal: Principal
  readonly amount: number | string
  readonly minimum: number | string | undefined
  /** A double cannot hold every decimal a client sends, so money is converted from the text. */
  readonly amountText: string | undefined
  readonly minimumText: string | undefined
  readonly fillOrKill: boolean | undefined
  readonly idempotencyKey: string | undefined
}

/**
 * The order a request becomes: amounts in nano-units, and with an Idempotency-Key, the key scoped to its
 * principal and the fingerprint of what was asked (a retry must ask for exactly the same trade).
 */
export const tradeOrder = (input: OrderInput): TradeOrder => ({
  side: input.side,
  ticker: input.ticker,
  wallet: input.wallet,
  // Never spend or move more than asked; never accept less than the guard asks.
  amount: toUnits(input.amountText ?? input.amount, "down"),
  minimum: input.minimum === undefined ? 0n : toUnits(input.minimumText ?? input.minimum, "up"),
  fillOrKill: input.fillOrKill === true,
  ...(input.idempotencyKey === undefined
    ? {}
    : {
        idempotency: {
          principal: principalId(input.principal),
          key: input.idempotencyKey,
          fingerprint: sha256Hex(
            JSON.stringify([
              input.side,
              input.ticker,
              input.wallet,
              canonicalDecimal(input.amountText ?? input.amount),
              input.minimumText === undefined && input.minimum === undefined
                ? null
                : canonicalDecimal(input.minimumText ?? input.minimum ?? 0),
              ...(input.fillOrKill === true ? [true] : [])
            ])
          )
        }
      })
})

/**
 * The prefix of the order ids Keel gives orders sent without an Idempotency-Key in runners mode, claimed like a key.
 */
export const GENERATED_ORDER_ID = "keel-order:"

/**
 * The one front door of a trade: the `HttpApi` route and the trade fast path both place trades here. The
 * caller must prove the wallet (`provenWallet`); the request becomes an order (`tradeOrder`); the ticker's
 * actor applies it, through the process's `TradeSender`, with the trades sent alongside it. A full queue is
 * `Overloaded` — nothing was done — instead of a defect.
 *
 * In runners mode (docs/cluster.md, "Exactly-once effects", "Trades") every order carries an id claimed first
 * inside its trade's transaction: the Idempotency-Key when the client sent one, else one made here. A message the cluster
 * delivers twice (it delivers at least once across a runner's death) then trades once, and the second delivery
 * answers the stored receipt. A replay of a made-up id is not the client's replay: it is answered as a first answer.
 */
export class Trades extends Effect.Service<Trades>()("market/Trades", {
  effect: Effect.gen(function* () {
    const sender = yield* TradeSender
    const orderIds = (yield* clusterSettings).mode === "runners"

    const place = (caller: Principal | undefined, request: TradeRequest) =>
      Effect.gen(function* () {
        const { principal, wallet } = yield* provenWallet(caller, request.userId)
        const guard = minimumField(request.side)
        const amountText = numberTextOf(request.amount)
        const minimumText = numberTextOf(request.minimum)
        const refused = tooLong([
          ["amount", amountText],
          [guard, minimumText]
        ])
        if (refused !== undefined) return yield* Effect.fail(refused)
        const ticker = request.ticker.toUpperCase()
        const generated =
          request.idempotencyKey === undefined && orderIds
            ? `${GENERATED_ORDER_ID}${randomBytes(16).toString("hex")}`
            : undefined
        const order = tradeOrder({
          side: request.side,
          ticker,
          wallet,
          principal,
          amount: decimalValueOf(request.amount),
          minimum: decimalValueOf(request.minimum),
          amountText,
          minimumText,
          fillOrKill: request.fillOrKill,
          idempotencyKey: request.idempotencyKey ?? generated
        })
        const outcome = yield* sender.place(ticker, order).pipe(
          // Logged by the actor; a 500 here (the problem middleware logs the request too).
          Effect.catchTag("ActorFailed", (failed) => Effect.die(failed))
        )
        return generated !== undefined && outcome.replayed ? { ...outcome, replayed: false } : outcome
      })

    return { place } as const
  }),
  dependencies: [TradeSender.Default]
}) {}
