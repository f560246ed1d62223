import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Config, Effect } from "effect"
import { routePath } from "./RoutePath.js"

/** Which configured origin list a route follows. */
export type CorsSurface = "marketplace" | "product" | "readout"

export interface CorsRoute {
  /** An exact path, a prefix ending in "/*", or a path where a "*" segment stands for any one segment. */
  readonly path: string
  readonly methods: ReadonlyArray<string>
  readonly surface: CorsSurface
}

/** Allowed origins per surface: `"*"` (any origin, no credentials) or exact origins. */
export type CorsOrigins = Readonly<Record<CorsSurface, "*" | ReadonlyArray<string>>>

/** The routes browsers call directly: the public reads, the assignment, the collectors, the blog. */
export const CORS_ROUTES: ReadonlyArray<CorsRoute> = [
  { path: "/api/agents", methods: ["GET"], surface: "marketplace" },
  { path: "/api/agents/*", methods: ["GET"], surface: "marketplace" },
  { path: "/api/tokens", methods: ["GET"], surface: "marketplace" },
  { path: "/api/coin/history", methods: ["GET"], surface: "marketplace" },
  { path: "/api/chat", methods: ["GET"], surface: "marketplace" },
  { path: "/api/stream", methods: ["GET"], surface: "marketplace" },
  { path: "/api/experiments/assign", methods: ["GET"], surface: "product" },
  { path: "/api/analytics/web/collect", methods: ["POST"], surface: "product" },
  // A web app's onboarding runs in the browser like its assignment does.
  { path: "/api/onboarding/bundle", methods: ["GET"], surface: "product" },
  { path: "/api/onboarding/events", methods: ["POST"], surface: "product" },
  { path: "/api/public/blog/*", methods: ["GET"], surface: "product" },
  // The readout, from a dashboard on another origin: its credential is the admin token in a header, never a cookie.
  { path: "/api/experiments/*/results", methods: ["GET"], surface: "readout" },
  { path: "/api/analytics/summary", methods: ["GET"], surface: "readout" }
]

/** Whether a request path is a route's: exact, under a "/*" prefix, or segment by segment with "*" for any one. */
const routeMatches = (pattern: string, path: string) => {
  if (pattern.endsWith("/*")) return path.startsWith(pattern.slice(0, -1))
  if (!pattern.includes("*")) return pattern === path
  const want = pattern.split("/")
  const have = path.split("/")
  return want.length === have.length && want.every((part, i) => (part === "*" ? have[i] !== "" : part === have[i]))
}

/** Headers a browser script may read on these answers (GitHub exposes its rate-limit and paging headers too). */
export const EXPOSED_HEADERS = [
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "retry-after",
  "link",
  "idempotent-replayed",
  "etag"
].join(", ")

/** Headers a browser may send on these routes (preflight). */
const ALLOWED_HEADERS = [
  "content-type",
  "authorization",
  "idempotency-key",
  "if-none-match",
  "x-client-key",
  "x-wallet-address",
  "x-wallet-signature",
  "x-wallet-timestamp",
  "x-wallet-nonce"
].join(", ")

/**
 * `KEEL_CORS_ORIGINS_MARKETPLACE` / `KEEL_CORS_ORIGINS_PRODUCT`: `*` (default) or comma-separated origins;
 * `KEEL_CORS_ORIGINS_READOUT` for the readout, the product's list unless set.
 */
export const corsOriginsFromConfig = Effect.gen(function* () {
  const read = (name: string, fallback = "*") =>
    Config.string(name).pipe(
      Config.withDefault(fallback),
      Config.map((text): "*" | ReadonlyArray<string> =>
        text.trim() === "*"
          ? "*"
          : text
              .split(",")
              .map((origin) => origin.trim().replace(/\/$/, ""))
              .filter((origin) => origin.length > 0)
      )
    )
  const productText = yield* Config.string("KEEL_CORS_ORIGINS_PRODUCT").pipe(Config.withDefault("*"))
  return {
    marketplace: yield* read("KEEL_CORS_ORIGINS_MARKETPLACE"),
    product: yield* read("KEEL_CORS_ORIGINS_PRODUCT"),
    readout: yield* read("KEEL_CORS_ORIGINS_READOUT", productText)
  } satisfies CorsOrigins
})

/**
 * CORS on the routes browsers call directly. With `*` any origin may read (no credentials: the API's
 * credentials are headers, never cookies); with a list, only those origins are echoed back (`Vary:
 * Origin`), and any other origin gets no CORS headers, so the browser refuses the answer. Preflights are
 * answered here; every other answer on those routes, errors included, carries the headers.
 */
export const corsMiddleware =
  (routes: ReadonlyArray<CorsRoute>, origins: CorsOrigins) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = routePath(request.url)
      const route = routes.find((r) => routeMatches(r.path, path))
      if (route === undefined) return yield* app
      const allowed = origins[route.surface]
      const origin = request.headers.origin
      const allowOrigin = allowed === "*" ? "*" : origin !== undefined && allowed.includes(origin) ? origin : undefined
      const cors: Record<string, string> =
        allowOrigin === undefined
          ? allowed === "*"
            ? {}
            : { vary: "Origin" }
          : {
              "access-control-allow-origin": allowOrigin,
              "access-control-expose-headers": EXPOSED_HEADERS,
              ...(allowed === "*" ? {} : { vary: "Origin" })
            }
      if (request.method === "OPTIONS") {
        return HttpServerResponse.empty({
          status: 204,
          headers:
            allowOrigin === undefined
              ? cors
              : {
                  ...cors,
                  "access-control-allow-methods": [...route.methods, "OPTIONS"].join(", "),
                  "access-control-allow-headers": ALLOWED_HEADERS,
                  "access-control-max-age": "86400"
                }
        })
      }
      const response = yield* app
      return HttpServerResponse.setHeaders(response, cors)
    })
