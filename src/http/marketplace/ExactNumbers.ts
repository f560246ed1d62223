import { HttpServerRequest } from "@effect/platform"
import { RequestError } from "@effect/platform/HttpServerError"
import { Effect, Layer } from "effect"
import { ExactNumbers, MONEY_FIELDS } from "../../contracts/market/Api.js"
import { parseJsonExact } from "../../contracts/market/JsonNumbers.js"

/**
 * `request` whose `json` keeps the decimal text of the money members' numbers (`parseJsonExact`). Everything
 * else is the request itself: its body is read once, by the request (`text` is the request's own, cached).
 */
const exactJson = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest =>
  Object.create(request, {
    text: { get: () => request.text },
    json: {
      get: () =>
        Effect.flatMap(request.text, (text) =>
          Effect.try({
            // An empty body is `null`, as the platform reads it.
            try: () => (text === "" ? null : parseJsonExact(text, MONEY_FIELDS)),
            catch: (cause) => new RequestError({ request, reason: "Decode", cause })
          })
        )
    }
  })

/** The trade endpoints' body reader: the decoder sees a money member's JSON number with its decimal text. */
export const ExactNumbersLive = Layer.succeed(ExactNumbers, Effect.map(HttpServerRequest.HttpServerRequest, exactJson))
