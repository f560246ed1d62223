import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Duration, Effect, Either } from "effect"
import { MarketplaceApi } from "../../contracts/market/Api.js"
import { isTicker } from "../../contracts/market/Ticker.js"
import { ApiKeys } from "../../services/market/ApiKeys.js"
import { MarketConfig } from "../../services/market/MarketConfig.js"
import { RateLimits } from "../../services/market/RateLimits.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { endpointSchemas, errorResponse, type FastPath } from "../FastPath.js"
import { API_KEY_SHAPE, rateHeaders, rateKey } from "./Gate.js"
import { placeTrade, provenWallet } from "./Trade.js"

/**
 * The two trade routes with no query string. A ticker it captures that breaks the ticker rule is left to the
 * route, which refuses it with the rule's message.
 */
const TRADE_ROUTE = /^\/api\/tokens\/([^/]+)\/(buy|sell)$/

const compile = (side: "buy" | "sell") => ({
  ...endpointSchemas(MarketplaceApi.groups.tokens, side),
  minimumField: side === "buy" ? "min_tokens_out" : "min_coin_out"
})

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
  const place = yield* placeTrade
  const sides = { buy: compile("buy"), sell: compile("sell") }
  const limit = config.limits.trading
  const windowMillis = Duration.toMillis(config.rateWindow)

  const serve = (request: HttpServerRequest.HttpServerRequest, side: "buy" | "sell", ticker: string) =>
    Effect.gen(function* () {
      const contentType = request.headers["content-type"]
      if (contentType !== undefined && !contentType.toLowerCase().trim().includes("application/json")) return undefined
      const key = bearerToken(request.headers.authorization)
      if (key === undefined || !API_KEY_SHAPE.test(key)) return undefined
      const compiled = sides[side]
      const headers = compiled.decodeHeaders!(request.headers)
      if (Either.isLeft(headers)) return undefined
      const body = yield* Effect.either(request.text)
      if (Either.isLeft(body)) return undefined
      let json: unknown
      try {
        json = JSON.parse(body.right)
      } catch {
        return undefined
      }
      const payload = compiled.decodePayload!(json)
      if (Either.isLeft(payload)) return undefined
      const principal = yield* keys.authenticate(key)
      if (principal === undefined) return undefined
      const proven = provenWallet(principal, payload.right.user_id as string)
      if (Either.isLeft(proven)) return undefined
      const { wallet } = proven.right
      const now = yield* Clock.currentTimeMillis
      const counted = limits.consumeAt(rateKey("trading", principal, undefined), limit, windowMillis, now)
      if (!counted.allowed) return undefined

      // Counted: from here on this request is answered here, whatever happens.
      const rate = rateHeaders(limit, counted.remaining, counted.resetAfterMillis, now)
      const outcome = yield* place(
        wallet,
        principal,
        {
          side,
          ticker,
          amount: payload.right.amount as number | string,
          minimum: payload.right[compiled.minimumField] as number | string | undefined,
          minimumField: compiled.minimumField,
          fillOrKill: payload.right.fill_or_kill as boolean | undefined,
          key: headers.right["idempotency-key"] as string | undefined
        },
        body.right
      ).pipe(
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
          error._tag === "Overloaded" ? { ...rate, "retry-after": String(error.retry_after_seconds) } : rate
        )
      }
      return HttpServerResponse.unsafeJson(compiled.encodeSuccess(outcome.right.receipt), {
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
