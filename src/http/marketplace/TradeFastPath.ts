import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Either, Schema } from "effect"
import { BuyPayload, MONEY_FIELDS, SellPayload, TradeHeaders } from "../../contracts/market/Api.js"
import { parseJsonExact } from "../../contracts/market/JsonNumbers.js"
import type { DecimalInput } from "../../contracts/market/Money.js"
import { BuyResult, SellResult, type TradeReceipt } from "../../contracts/market/Receipts.js"
import { isTicker } from "../../contracts/market/Ticker.js"
import { ApiKeys } from "../../services/market/ApiKeys.js"
import { MarketConfig } from "../../services/market/MarketConfig.js"
import { RateLimits } from "../../services/market/RateLimits.js"
import { provenWallet, Trades } from "../../services/market/Trades.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { errorResponse, type FastPath } from "../FastPath.js"
import { API_KEY_SHAPE, rateHeaders, rateKey } from "./Gate.js"

/**
 * The two trade routes with no query string. A ticker it captures that breaks the ticker rule is left to the
 * route, which refuses it with the rule's message.
 */
const TRADE_ROUTE = /^\/api\/tokens\/([^/]+)\/(buy|sell)$/

/** A side's body decoded by the contract's own schema, as the fields `Trades.place` reads. */
interface Decoded {
  readonly user_id: string
  readonly amount: DecimalInput
  readonly minimum: DecimalInput | undefined
  readonly fillOrKill: boolean | undefined
}

/**
 * Each side's body decoder and answer encoder: the contract's own schemas (what the `HttpApi` route decodes
 * and encodes for every request), compiled once, so the fast path accepts exactly what the route accepts and
 * answers what the route would.
 */
const SIDES = {
  buy: {
    decode: (json: unknown) =>
      Either.map(
        Schema.decodeUnknownEither(BuyPayload)(json),
        (body): Decoded => ({
          user_id: body.user_id,
          amount: body.amount,
          minimum: body.min_tokens_out,
          fillOrKill: body.fill_or_kill
        })
      ),
    encode: Schema.encodeSync(BuyResult) as (receipt: TradeReceipt) => unknown
  },
  sell: {
    decode: (json: unknown) =>
      Either.map(
        Schema.decodeUnknownEither(SellPayload)(json),
        (body): Decoded => ({
          user_id: body.user_id,
          amount: body.amount,
          minimum: body.min_coin_out,
          fillOrKill: undefined
        })
      ),
    encode: Schema.encodeSync(SellResult) as (receipt: TradeReceipt) => unknown
  }
} as const

const decodeHeaders = Schema.decodeUnknownEither(TradeHeaders)

/**
 * The trade endpoints' common case, served without the `HttpApi` machinery: a JSON body that decodes, an
 * API key that is live, the caller's own wallet, room under the trading limit. Everything else — wallet
 * signatures, bad input, an unknown key, another wallet's `user_id`, the limit reached — is left to the
 * `HttpApi` route, untouched: nothing has been counted or done when the fast path steps aside, so the
 * route answers as it always does. Once the request is counted, the fast path answers it itself, with
 * the endpoint's own schemas and the gate's headers: the same status, headers and bytes as the route
 * (test/market/fast-path.test.ts replays a recorded set of requests through both). The `HttpApi` route
 * costs ≈ 300 µs more a trade (docs/performance.md); `KEEL_FAST_PATHS=false` turns this off.
 */
export const tradeFastPath = Effect.gen(function* () {
  const keys = yield* ApiKeys
  const limits = yield* RateLimits
  const config = yield* MarketConfig
  const trades = yield* Trades
  const limit = config.limits.trading
  const windowMillis = Duration.toMillis(config.rateWindow)

  const serve = (request: HttpServerRequest.HttpServerRequest, side: "buy" | "sell", ticker: string) =>
    Effect.gen(function* () {
      const contentType = request.headers["content-type"]
      if (contentType !== undefined && !contentType.toLowerCase().trim().includes("application/json")) return undefined
      const key = bearerToken(request.headers.authorization)
      if (key === undefined || !API_KEY_SHAPE.test(key)) return undefined
      const compiled = SIDES[side]
      const headers = decodeHeaders(request.headers)
      if (Either.isLeft(headers)) return undefined
      const body = yield* Effect.either(request.text)
      if (Either.isLeft(body)) return undefined
      let json: unknown
      try {
        json = parseJsonExact(body.right, MONEY_FIELDS)
      } catch {
        return undefined
      }
      const payload = compiled.decode(json)
      if (Either.isLeft(payload)) return undefined
      const principal = yield* keys.authenticate(key)
      if (principal === undefined) return undefined
      // Another wallet's user_id is the route's to refuse: nothing is counted before the wallet rule holds.
      if (Either.isLeft(provenWallet(principal, payload.right.user_id))) return undefined
      const { now, outcome: counted } = yield* limits.consume(
        "trading",
        rateKey("trading", principal, undefined),
        limit,
        windowMillis
      )
      // Over the limit or the counters unreachable: nothing was counted, the route answers (and counts) as always.
      if (!counted.allowed) return undefined

      // Counted: from here on this request is answered here, whatever happens.
      const rate = rateHeaders(limit, counted.remaining, counted.resetAfterMillis, now)
      const outcome = yield* trades
        .place(principal, {
          side,
          ticker,
          userId: payload.right.user_id,
          amount: payload.right.amount,
          minimum: payload.right.minimum,
          fillOrKill: payload.right.fillOrKill,
          idempotencyKey: headers.right["idempotency-key"]
        })
        .pipe(
          Effect.either,
          // A defect (the trade's transaction failed) goes on to the problem middleware as the route's does (a
          // logged 500), with the gate's headers, which the route adds the same way.
          Effect.catchAllCause((cause) =>
            Effect.zipRight(
              HttpApp.appendPreResponseHandler((_request, response) =>
                Effect.succeed(HttpServerResponse.setHeaders(response, rate))
              ),
              Effect.failCause(cause)
            )
          )
        )
      if (Either.isLeft(outcome)) {
        const error = outcome.left
        return errorResponse(
          error,
          error._tag === "Overloaded" || error._tag === "TradeOutcomeUnknown"
            ? { ...rate, "retry-after": String(error.retry_after_seconds) }
            : rate
        )
      }
      return HttpServerResponse.unsafeJson(compiled.encode(outcome.right.receipt), {
        status: 200,
        headers: outcome.right.replayed ? { ...rate, "idempotent-replayed": "true" } : rate
      })
    })

  const fastPath: FastPath = (app) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (request.method !== "POST") return app
      const route = TRADE_ROUTE.exec(request.url)
      if (route === null || !isTicker(route[1]!)) return app
      // Interruptible, as the router runs a route: a client that hangs up stops its request here too.
      return Effect.flatMap(
        Effect.interruptible(serve(request, route[2] as "buy" | "sell", route[1]!.toUpperCase())),
        (response) => (response === undefined ? app : Effect.succeed(response))
      )
    })
  return fastPath
})
