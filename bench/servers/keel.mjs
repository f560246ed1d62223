// Keel: the production server layers (every surface, problem middleware, body limits, request log
// on the port in KEEL_HTTP_PORT), as `ctl serve` runs them.
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Layers, Platform } from "keel"

Layer.launch(Layers.serverLive()).pipe(
  Effect.provide(Platform.loggerFromConfig.pipe(Layer.provide(Platform.AppConfig.Default))),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
