import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Layer, Option } from "effect"
import {
  AuthenticatedEndpoint,
  CurrentEndpointClass,
  type EndpointClass,
  MarketGate,
  TradingEndpoint
} from "../../contracts/market/Api.js"
import { RateLimited, RateLimitUnavailable, Unauthorized } from "../../contracts/market/Errors.js"
import { ApiKeys, type Principal, principalId } from "../../services/market/ApiKeys.js"
import { MarketConfig } from "../../services/market/MarketConfig.js"
import { RateLimits } from "../../services/market/RateLimits.js"
import { WalletAuth } from "../../services/market/WalletAuth.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import { TrustedProxies } from "../../services/platform/TrustedProxies.js"

/** What an API key looks like; anything else is refused before any lookup. */
export const API_KEY_SHAPE = /^[A-Za-z0-9_-]{8,200}$/

const unauthorized = (detail: string) => new Unauthorized({ code: "UNAUTHORIZED", detail })

/** The headers every marketplace answer carries (docs/marketplace.md, "Rate limits"), as GitHub sends them. */
export const rateHeaders = (limit: number, remaining: number, resetAfterMillis: number, now: number) => ({
  "x-ratelimit-limit": String(limit),
  "x-ratelimit-remaining": String(Math.max(0, remaining)),
  "x-ratelimit-reset": String(Math.ceil((now + resetAfterMillis) / 1000))
})

/**
 * The counter a request is counted against: public endpoints per client IP, the others per principal, or per
 * IP when nobody was proven. The gate and the trade fast path count on the same counters.
 */
export const rateKey = (cls: EndpointClass, principal: Principal | undefined, ip: string | undefined) =>
  principal === undefined ? `${cls}:ip:${ip}` : `${cls}:${principalId(principal)}`

const rateLimited = (cls: EndpointClass, limit: number, window: Duration.Duration, retryAfterMillis: number) => {
  // Whole seconds to wait, at least one.
  const retryAfter = Math.max(1, Math.ceil(retryAfterMillis / 1000))
  return new RateLimited({
    code: "RATE_LIMITED",
    retry_after_seconds: retryAfter,
    detail: `more than ${limit} ${cls} requests per ${Duration.format(window)}; retry in ${retryAfter} s`
  })
}

/** Counting is shared through Redis, which is failing, and this class fails closed (docs/marketplace.md). */
const rateLimitUnavailable = (cls: EndpointClass, retryAfterMillis: number) => {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMillis / 1000))
  return new RateLimitUnavailable({
    code: "RATE_LIMIT_UNAVAILABLE",
    retry_after_seconds: retryAfter,
    detail: `the shared rate-limit counters cannot be read and ${cls} requests are refused meanwhile; retry in ${retryAfter} s`
  })
}

const WALLET_HEADERS = ["x-wallet-address", "x-wallet-signature", "x-wallet-timestamp", "x-wallet-nonce"] as const

export const MarketGateLive = Layer.effect(
  MarketGate,
  Effect.gen(function* () {
    const keys = yield* ApiKeys
    const wallets = yield* WalletAuth
    const limits = yield* RateLimits
    const proxies = yield* TrustedProxies
    const config = yield* MarketConfig

    /** An API key wins over wallet headers; no credentials at all is `undefined`, not an error. */
    const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const authorization = request.headers.authorization
        if (authorization !== undefined) {
          const key = bearerToken(authorization)
          if (key === undefined || !API_KEY_SHAPE.test(key))
            return yield* unauthorized("Authorization must be `Bearer <API key>`")
          const principal = yield* keys.authenticate(key)
          if (principal === undefined) return yield* unauthorized("unknown or revoked API key")
          return principal
        }
        const present = WALLET_HEADERS.filter((name) => request.headers[name] !== undefined)
        if (present.length === 0) return undefined
        if (present.length < WALLET_HEADERS.length)
          return yield* unauthorized(`wallet signatures need all of ${WALLET_HEADERS.join(", ")}`)
        const body = yield* request.text.pipe(Effect.orDie)
        const address = yield* wallets.verify({
          method: request.method,
          pathWithQuery: request.url,
          body,
          address: request.headers["x-wallet-address"]!,
          signature: request.headers["x-wallet-signature"]!,
          timestamp: request.headers["x-wallet-timestamp"]!,
          nonce: request.headers["x-wallet-nonce"]!
        })
        return { kind: "wallet", address } satisfies Principal
      }).pipe(Effect.either)

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // The endpoint's own marker (the router answers a HEAD with the GET route, and so with its class).
      const cls = Option.getOrElse(yield* Effect.serviceOption(CurrentEndpointClass), () => "public" as const)
      // Behind a trusted proxy, the client it names; otherwise the socket's peer (headers are not evidence).
      const ip = proxies.clientAddress(Option.getOrUndefined(request.remoteAddress), request.headers)
      const credentials = cls === "public" ? undefined : yield* authenticate(request)
      const principal = credentials?._tag === "Right" ? credentials.right : undefined
      const key = rateKey(cls, principal, ip)
      const limit = config.limits[cls]
      const windowMillis = Duration.toMillis(config.rateWindow)
      const { now, outcome } = yield* limits.consume(cls, key, limit, windowMillis)
      if (!outcome.allowed) {
        if ("unavailable" in outcome) {
          const error = rateLimitUnavailable(cls, outcome.retryAfterMillis)
          yield* HttpApp.appendPreResponseHandler((_request, response) =>
            Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(error.retry_after_seconds)))
          )
          return yield* error
        }
        const error = rateLimited(cls, limit, config.rateWindow, outcome.retryAfterMillis)
        yield* HttpApp.appendPreResponseHandler((_request, response) =>
          Effect.succeed(
            HttpServerResponse.setHeaders(response, {
              ...rateHeaders(limit, 0, outcome.retryAfterMillis, now),
              "retry-after": String(error.retry_after_seconds)
            })
          )
        )
        return yield* error
      }
      const { remaining, resetAfterMillis } = outcome
      yield* HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, rateHeaders(limit, remaining, resetAfterMillis, now)))
      )
      if (credentials?._tag === "Left") return yield* credentials.left
      if (cls !== "public" && principal === undefined) {
        return yield* unauthorized(
          "credentials required: `Authorization: Bearer <API key>` or the X-Wallet-* signature headers"
        )
      }
      return { principal }
    })
  })
)

/** The endpoint markers: each provides its endpoint's class to the gate, which runs inside them. */
export const EndpointClassesLive = Layer.mergeAll(
  Layer.succeed(TradingEndpoint, Effect.succeed("trading" as const)),
  Layer.succeed(AuthenticatedEndpoint, Effect.succeed("authenticated" as const))
)
