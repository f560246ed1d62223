import * as Http from "node:http"
import {
  type Etag,
  type FileSystem,
  HttpApiSwagger,
  HttpLayerRouter,
  type HttpPlatform,
  HttpServer,
  type HttpServerRequest,
  HttpServerResponse,
  type Path
} from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Duration, Effect, Layer, Option } from "effect"
import { ControlPlaneApi } from "../contracts/controlplane/Api.js"
import { GroundTruthApi } from "../contracts/groundtruth/Api.js"
import { MarketplaceApi } from "../contracts/market/Api.js"
import { ProductApi } from "../contracts/product/Api.js"
import { VaultApi } from "../contracts/vault/Api.js"
import { bodyLimitMiddleware } from "../http/BodyLimit.js"
import { installClientErrorAnswer } from "../http/ClientError.js"
import { CORS_ROUTES, type CorsOrigins, corsMiddleware, corsOriginsFromConfig } from "../http/Cors.js"
import { FleetLive } from "../http/controlplane/Fleet.js"
import { FleetAuthLive, ReconcileAuthLive } from "../http/controlplane/FleetAuth.js"
import { HandoffQueueLive } from "../http/controlplane/HandoffQueue.js"
import { HostHealthLive } from "../http/controlplane/HostHealth.js"
import { JobsLive } from "../http/controlplane/Jobs.js"
import { ObjectsLive } from "../http/controlplane/Objects.js"
import { ReconcileWrongMethodsLive } from "../http/controlplane/ReconcileMethods.js"
import { StorageLive } from "../http/controlplane/Storage.js"
import { WorkflowsLive } from "../http/controlplane/Workflows.js"
import { composeFastPaths, type FastPath } from "../http/FastPath.js"
import {
  GroundTruthAskLive,
  GroundTruthAssetsLive,
  GroundTruthAuthLive,
  GroundTruthHealthLive,
  GroundTruthIngestLive,
  GroundTruthReadLive
} from "../http/groundtruth/Http.js"
import { ExactNumbersLive } from "../http/marketplace/ExactNumbers.js"
import { EndpointClassesLive, MarketGateLive } from "../http/marketplace/Gate.js"
import { AgentsLive, ChatLive, CoinLive, StreamLive, TokensLive } from "../http/marketplace/Http.js"
import { tradeFastPath } from "../http/marketplace/TradeFastPath.js"
import { problemMiddleware } from "../http/Problem.js"
import { assignFastPath } from "../http/product/AssignFastPath.js"
import { AnalyticsLive, BlogLive, ExperimentsLive, OnboardingLive, ProductHealthLive } from "../http/product/Http.js"
import {
  docsPath,
  openApiPath,
  type ServedName,
  ServedNames,
  type SurfaceName,
  SurfaceNames
} from "../http/SurfaceNames.js"
import { surfaceApis } from "../http/Surfaces.js"
import { UiRoutes } from "../http/ui/UiRoutes.js"
import { VaultNoStoreLive, VaultTokensLive, vaultPathsNoStore } from "../http/vault/Http.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { Shutdown } from "../services/platform/Shutdown.js"
import { ProductConfig } from "../services/product/ProductConfig.js"

const docs = (surface: SurfaceName) =>
  HttpApiSwagger.layerHttpLayerRouter({ api: surfaceApis[surface], path: docsPath(surface) })

/** Each surface: its HttpApi routes with their handlers, its OpenAPI JSON and its Swagger UI. */
export const SurfaceRoutes = {
  marketplace: Layer.mergeAll(
    HttpLayerRouter.addHttpApi(MarketplaceApi, { openapiPath: openApiPath("marketplace") }).pipe(
      Layer.provide([AgentsLive, TokensLive, CoinLive, ChatLive, StreamLive]),
      Layer.provide([MarketGateLive, ExactNumbersLive, EndpointClassesLive])
    ),
    docs("marketplace")
  ),
  groundtruth: Layer.mergeAll(
    HttpLayerRouter.addHttpApi(GroundTruthApi, { openapiPath: openApiPath("groundtruth") }).pipe(
      Layer.provide([
        GroundTruthHealthLive,
        GroundTruthReadLive,
        GroundTruthIngestLive,
        GroundTruthAskLive,
        GroundTruthAssetsLive
      ]),
      Layer.provide(GroundTruthAuthLive)
    ),
    docs("groundtruth")
  ),
  product: Layer.mergeAll(
    HttpLayerRouter.addHttpApi(ProductApi, { openapiPath: openApiPath("product") }).pipe(
      Layer.provide([ProductHealthLive, ExperimentsLive, AnalyticsLive, OnboardingLive, BlogLive])
    ),
    docs("product")
  ),
  controlplane: Layer.mergeAll(
    HttpLayerRouter.addHttpApi(ControlPlaneApi, { openapiPath: openApiPath("controlplane") }).pipe(
      Layer.provide([HostHealthLive, ObjectsLive, FleetLive, WorkflowsLive, StorageLive, HandoffQueueLive, JobsLive]),
      Layer.provide([FleetAuthLive, ReconcileAuthLive])
    ),
    ReconcileWrongMethodsLive,
    docs("controlplane")
  ),
  vault: Layer.mergeAll(
    HttpLayerRouter.addHttpApi(VaultApi, { openapiPath: openApiPath("vault") }).pipe(
      Layer.provide(VaultTokensLive),
      Layer.provide(VaultNoStoreLive)
    ),
    docs("vault")
  )
} as const

/** `GET /docs`: where each served surface documents itself. */
const docsIndex = (surfaces: ReadonlyArray<SurfaceName>) =>
  HttpLayerRouter.add(
    "GET",
    "/docs",
    HttpServerResponse.unsafeJson({
      surfaces: surfaces.map((surface) => ({
        surface,
        swagger_ui: docsPath(surface),
        openapi: openApiPath(surface)
      }))
    })
  )

/** The object API's bodies are bytes of any kind (streamed to the store), not JSON. */
const OBJECT_ROUTES = "/api/objects/"

/** The collectors read JSON whatever the Content-Type (`sendBeacon` sends `text/plain`; docs/analytics.md). */
const COLLECTOR_ROUTES = new Set(["/api/analytics/web/collect", "/api/analytics/mobile/collect"])

/** Per-route body limits: the collectors have their own, smaller ones; objects KEEL_OBJECT_MAX_BYTES. */
const routeBodyLimits = (defaultLimit: number, product: ProductConfig, objectLimit: number) => {
  const limits = new Map([
    ["/api/analytics/web/collect", product.webBodyLimit],
    ["/api/analytics/mobile/collect", product.mobileBodyLimit]
  ])
  return (path: string) => (path.startsWith(OBJECT_ROUTES) ? objectLimit : (limits.get(path) ?? defaultLimit))
}

/**
 * CORS outermost, then problem bodies, so a refused body (413) gets the same shape as everything else; the
 * fast paths inside the body guard, so they only see bodies it let through.
 */
const globalMiddleware = (bodyLimit: (path: string) => number, origins: CorsOrigins, fastPaths: FastPath) =>
  HttpLayerRouter.middleware<{ handles: unknown }>()(
    (app) =>
      // Every failure is turned into a response here; the cast tells the router's type-level
      // bookkeeping that errors other middleware does not know about are still "handled".
      corsMiddleware(
        CORS_ROUTES,
        origins
      )(
        vaultPathsNoStore(
          problemMiddleware(
            bodyLimitMiddleware(bodyLimit, {
              // Raw bytes (objects), and the reconcile path, which refuses any body itself (400).
              isJson: (path) => !path.startsWith(OBJECT_ROUTES) && path !== "/api/host/storage-root-reconcile",
              anyContentType: (path) => COLLECTOR_ROUTES.has(path)
            })(fastPaths(app))
          )
        )
      ) as Effect.Effect<
        HttpServerResponse.HttpServerResponse,
        HttpLayerRouter.unhandled,
        HttpServerRequest.HttpServerRequest
      >,
    { global: true }
  )

/**
 * The router's settings: the platform's (trailing and duplicate slashes ignored, static segments in any case;
 * `routePath` reads a URL the same way), with no length limit of the router's own on a path parameter (its
 * default, 100, guards regex parameters, which Keel has none of): a parameter of any length reaches its route,
 * whose schema answers it, so a ticker or a slug is refused or not found by one rule, never by "no route" past some
 * length. Node's limit on the request head (16 KiB, answered 431) bounds it.
 */
export const ROUTER_CONFIG = { maxParamLength: Number.MAX_SAFE_INTEGER } as const

export interface ServeOptions {
  /** The API surfaces and the dashboard (`ui`) to serve; all of them when empty or absent. */
  readonly surfaces?: ReadonlyArray<ServedName>
  /** Routes beyond the surfaces (embedders' own, or a test's). */
  readonly extraRoutes?: Layer.Layer<
    never,
    never,
    HttpLayerRouter.HttpRouter | Etag.Generator | FileSystem.FileSystem | HttpPlatform.HttpPlatform | Path.Path
  >
}

/** The routes of the chosen surfaces behind the shared middleware, independent of any socket. */
export const httpRoutes = (options: ServeOptions = {}) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const product = yield* ProductConfig
      const origins = yield* corsOriginsFromConfig
      const objectLimit = yield* Config.integer("KEEL_OBJECT_MAX_BYTES").pipe(
        Config.withDefault(4 * 1024 * 1024 * 1024),
        Config.validate({ message: "KEEL_OBJECT_MAX_BYTES must be a positive integer", validation: (n) => n > 0 })
      )
      const surfaces: ReadonlyArray<ServedName> =
        options.surfaces && options.surfaces.length > 0 ? options.surfaces : ServedNames
      const unique = SurfaceNames.filter((name) => surfaces.includes(name))
      // On unless KEEL_FAST_PATHS=false: the same answers either way (test/market/fast-path.test.ts).
      const fastPathsOn = yield* Config.boolean("KEEL_FAST_PATHS").pipe(Config.withDefault(true))
      const fastPaths = composeFastPaths(
        ...(fastPathsOn && unique.includes("marketplace") ? [yield* tradeFastPath] : []),
        ...(fastPathsOn && unique.includes("product") ? [yield* assignFastPath] : [])
      )
      return Layer.mergeAll(
        docsIndex(unique),
        globalMiddleware(routeBodyLimits(config.bodyLimitBytes, product, objectLimit), origins, fastPaths),
        options.extraRoutes ?? Layer.empty,
        surfaces.includes("ui") ? UiRoutes : Layer.empty,
        ...unique.map((surface) => SurfaceRoutes[surface])
      )
    })
  )

/**
 * A Node HTTP server that shuts down gracefully: on scope close it stops accepting, lets in-flight
 * requests finish, and after `grace` cuts whatever is left so that shutdown always ends.
 */
export const nodeServer = (options: {
  readonly host: string
  readonly port: number
  readonly grace: Duration.Duration
}) =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      // What Node's HTTP parser refuses (bad framing, headers too large) is answered as a problem too.
      // A missing Host header is refused by the body guard, in the problem shape (Node's own answer has no body).
      const server = installClientErrorAnswer(Http.createServer({ keepAliveTimeout: 5_000, requireHostHeader: false }))
      const shutdownGuard = Layer.scopedDiscard(
        Effect.gen(function* () {
          yield* HttpServer.HttpServer
          const shutdown = yield* Effect.serviceOption(Shutdown)
          yield* Effect.addFinalizer(() =>
            Effect.gen(function* () {
              // Event streams end first, so their connections can close like any other.
              if (Option.isSome(shutdown)) yield* shutdown.value.begin
              server.closeIdleConnections()
              // A stream's response ends a moment after `begin`; its keep-alive connection becomes idle only
              // then, and would otherwise wait out Node's keep-alive timeout (5 s): swept again until closed.
              const sweep = setInterval(() => server.closeIdleConnections(), 50)
              sweep.unref()
              server.once("close", () => clearInterval(sweep))
              setTimeout(() => {
                clearInterval(sweep)
                server.closeAllConnections()
              }, Duration.toMillis(options.grace)).unref()
            })
          )
        })
      )
      return shutdownGuard.pipe(
        Layer.provideMerge(NodeHttpServer.layer(() => server, { host: options.host, port: options.port }))
      )
    })
  )

/** Serves the chosen surfaces on host:port (defaults from AppConfig). */
export const httpServer = (options: ServeOptions & { readonly host?: string; readonly port?: number } = {}) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      return HttpLayerRouter.serve(httpRoutes(options), {
        disableLogger: !config.requestLog,
        routerConfig: ROUTER_CONFIG
      }).pipe(
        Layer.provide(
          nodeServer({
            host: options.host ?? config.httpHost,
            port: options.port ?? config.httpPort,
            grace: config.shutdownGrace
          })
        )
      )
    })
  )
