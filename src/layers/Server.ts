import { HttpMiddleware } from "@effect/platform"
import { Effect, Layer } from "effect"
import { constTrue } from "effect/Function"
import { AutonomyScheduleLive } from "../actors/AutonomyTicker.js"
import { MarketScheduleLive } from "../actors/MarketAgent.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { seedDemoData } from "../services/platform/DemoData.js"
import { Blog } from "../services/product/Blog.js"
import { ProductConfig } from "../services/product/ProductConfig.js"
import { AllDemoSeeders } from "./DemoSeeds.js"
import { httpServer, type ServeOptions } from "./Http.js"
import { AppLive } from "./Live.js"

/** Demo data on the first start of an empty data dir, unless KEEL_DEMO_DATA=false. */
export const DemoDataLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (config.demoData) yield* seedDemoData(AllDemoSeeders)
  })
)

/** Posts from KEEL_BLOG_DIR, imported at every start (idempotent; failures are logged, not fatal). */
export const BlogImportLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* ProductConfig
    if (config.blogDir === undefined) return
    const report = yield* (yield* Blog).importDirectory(config.blogDir).pipe(Effect.either)
    if (report._tag === "Left") {
      yield* Effect.logError("blog import failed").pipe(Effect.annotateLogs("detail", report.left.detail))
      return
    }
    yield* Effect.logInfo("blog imported").pipe(
      Effect.annotateLogs({
        created: report.right.created.length,
        updated: report.right.updated.length,
        failed: report.right.failed.map((f) => `${f.file}: ${f.reason}`).join(" | ")
      })
    )
  })
)

/**
 * Spans only where someone collects them (KEEL_TRACING); set before the server forks its request fibers.
 * Off, the HTTP server's own request span is skipped too: a disabled tracer still builds a no-op span and
 * copies the request's context to hold it.
 */
export const TracingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    config.tracing
      ? Layer.setTracerEnabled(true)
      : Layer.merge(
          Layer.setTracerEnabled(false),
          Layer.locallyScoped(HttpMiddleware.currentTracerDisabledWhen, constTrue)
        )
  )
)

/**
 * `layer` built with the tracer KEEL_TRACING asks for. A `FiberRef` set by a layer reaches only the layers
 * built after it with it provided, and the fibers they fork: provided to the HTTP layer alone, the tracer
 * setting missed every fiber the application graph forks while it is built (the actors' mailboxes and
 * RPC servers, the schedules), which kept making spans with the tracer meant to be off.
 */
export const withTracingFromConfig = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  layer.pipe(Layer.provide(TracingLive.pipe(Layer.provide(AppConfig.Default))))

/**
 * Start-up work, in order: first the demo data and the blog import, then the market's schedules.
 * The schedules' first tick runs at once (the coin price sample, the cost accrual), so started any
 * earlier they would record the configured initial coin price before the demo's history exists: a
 * point off the demo's price at server start.
 */
export const StartupLive = Layer.merge(MarketScheduleLive, AutonomyScheduleLive).pipe(
  Layer.provide([DemoDataLive, BlogImportLive])
)

/** What `ctl serve` runs: the HTTP server on the full application graph. */
export const serverLive = (options: ServeOptions & { readonly host?: string; readonly port?: number } = {}) =>
  withTracingFromConfig(httpServer(options).pipe(Layer.provide(StartupLive), Layer.provideMerge(AppLive)))
