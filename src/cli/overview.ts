import { Command } from "@effect/cli"
import { FleetServicesLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/overview.js"))

export const overview = Command.make("overview", { json }, (args) => impl((m) => m.overview(args))).pipe(
  Command.withDescription("Fleet, queue, quota and billing from the configured backend"),
  Command.provide(FleetServicesLive)
)
