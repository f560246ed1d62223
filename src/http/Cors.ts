import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

export interface CorsRoute {
  /** An exact path, or a prefix ending in "/*". */
  readonly path: string
  readonly methods: ReadonlyArray<string>
}

const pathOf = (url: string) => url.split("?")[0] ?? url

/**
 * Open CORS (any origin, no credentials) on the routes browsers call directly: the web collector
 * (sendBeacon, fetch keepalive) and the public read endpoints. Preflights are answered here; every
 * other answer on those routes, errors included, carries the allow-origin header.
 */
export const corsMiddleware =
  (routes: ReadonlyArray<CorsRoute>) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = pathOf(request.url)
      const route = routes.find((r) => (r.path.endsWith("/*") ? path.startsWith(r.path.slice(0, -1)) : r.path === path))
      if (route === undefined) return yield* app
      if (request.method === "OPTIONS") {
        return HttpServerResponse.empty({
          status: 204,
          headers: {
            "access-control-allow-origin": "*",
            "access-control-allow-methods": [...route.methods, "OPTIONS"].join(", "),
            "access-control-allow-headers": "content-type",
            "access-control-max-age": "86400"
          }
        })
      }
      const response = yield* app
      return HttpServerResponse.setHeader(response, "access-control-allow-origin", "*")
    })
