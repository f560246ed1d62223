import { Effect, Layer } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { seedDemoData } from "../services/platform/DemoData.js"
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

/** What `ctl serve` runs: the HTTP server on the full application graph. */
export const serverLive = (options: ServeOptions & { readonly host?: string; readonly port?: number } = {}) =>
  httpServer(options).pipe(Layer.provide(DemoDataLive), Layer.provideMerge(AppLive))
