import { Command } from "@effect/cli"
import { Duration, Effect } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { emit, json, table } from "./Output.js"

const show = Command.make("show", { json }, ({ json }) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const settings = {
      data_dir: config.dataDir,
      database_file: config.databaseFile,
      http_host: config.httpHost,
      http_port: config.httpPort,
      http_body_limit: config.bodyLimitBytes,
      shutdown_grace: Duration.format(config.shutdownGrace),
      log_format: config.logFormat,
      log_level: config.logLevel,
      demo_data: config.demoData,
      cluster_poll_interval: Duration.format(config.clusterPollInterval)
    }
    yield* emit(json, settings, (s) =>
      table(
        ["SETTING", "VALUE"],
        Object.entries(s).map(([k, v]) => [k, String(v)])
      )
    )
  })
).pipe(
  Command.withDescription("Print the effective settings (from the environment, see docs/configuration.md)"),
  Command.provide(AppConfig.Default)
)

export const config = Command.make("config").pipe(
  Command.withDescription("Inspect configuration (opens nothing)"),
  Command.withSubcommands([show])
)
