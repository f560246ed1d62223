// Keel: the production server layers (every surface, problem middleware, body limits, request log
// on the port in KEEL_HTTP_PORT), as `ctl serve` runs them.
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig, loggerFromConfig, serverLive } from "keel"

Layer.launch(serverLive()).pipe(
  Effect.provide(loggerFromConfig.pipe(Layer.provide(AppConfig.Default))),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
