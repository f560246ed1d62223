import { Command } from "@effect/cli"
import { Effect } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { effectiveSettings } from "../services/platform/EffectiveSettings.js"
import { emit, json, table } from "./Output.js"

const show = Command.make("show", { json }, ({ json }) =>
  Effect.gen(function* () {
    const settings = yield* effectiveSettings
    yield* emit(json, settings, (s) =>
      table(
        ["SETTING", "VALUE"],
        Object.entries(s).map(([k, v]) => [k, v === null ? "-" : String(v)])
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
