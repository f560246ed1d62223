import { Command } from "@effect/cli"
import { AppConfigLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/config.js"))

const show = Command.make("show", { json }, (args) => impl((m) => m.show(args))).pipe(
  Command.withDescription("Print the effective settings (from the environment, see docs/configuration.md)"),
  Command.provide(AppConfigLive)
)

export const config = Command.make("config").pipe(
  Command.withDescription("Inspect configuration (opens nothing)"),
  Command.withSubcommands([show])
)
