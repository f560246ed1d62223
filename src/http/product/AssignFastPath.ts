import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either } from "effect"
import { ProductApi } from "../../contracts/product/Api.js"
import { Assigner } from "../../services/product/Assigner.js"
import { endpointSchemas, errorResponse, type FastPath, plainQuery } from "../FastPath.js"

const PATH = "/api/experiments/assign?"

/**
 * `GET /api/experiments/assign` without the `HttpApi` machinery, for a query string of plain `name=value`
 * pairs that the endpoint's own schemas accept; anything else (escapes, repeated names, bad parameters) goes
 * to the `HttpApi` route untouched. An assignment or a refusal (unknown app, bad client key) is answered with
 * the endpoint's schemas: the same status, headers and bytes as the route (test/product/fast-path.test.ts).
 */
export const assignFastPath = Effect.gen(function* () {
  const assigner = yield* Assigner
  const assign = endpointSchemas(ProductApi.groups.experiments, "assign")

  const serve = (request: HttpServerRequest.HttpServerRequest) => {
    const query = plainQuery(request.url.slice(PATH.length))
    if (query === undefined) return undefined
    const params = assign.decodeUrlParams!(query)
    if (Either.isLeft(params)) return undefined
    const headers = assign.decodeHeaders!(request.headers)
    if (Either.isLeft(headers)) return undefined
    return assigner
      .assign({
        appId: params.right.app_id as string,
        platform: params.right.platform as string,
        surface: params.right.surface as string,
        subject: params.right.subject as string,
        clientKey: headers.right["x-client-key"] as string | undefined
      })
      .pipe(
        Effect.match({
          onSuccess: (assignment) => HttpServerResponse.unsafeJson(assign.encodeSuccess(assignment)),
          onFailure: (error) => errorResponse(error)
        })
      )
  }

  const fastPath: FastPath = (app) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (request.method !== "GET" || !request.url.startsWith(PATH)) return app
      const served = serve(request)
      // Interruptible, as the router runs a route: a client that hangs up stops its request here too.
      return served === undefined ? app : Effect.interruptible(served)
    })
  return fastPath
})
