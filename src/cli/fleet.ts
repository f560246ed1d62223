import { Args, Command, Options } from "@effect/cli"
import { FleetConfigLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/fleet.js"))

export const probeConfig = {
  host: Args.text({ name: "HOST" }),
  pauseMs: integerOption("pause-ms", 0, 60_000).pipe(
    Options.withDefault(0),
    Options.withDescription("Pause after each step, 0-60000 ms (to watch a run step by step)")
  ),
  requestId: Options.text("request-id").pipe(
    Options.optional,
    Options.withDescription("The same id attaches to the same run (a retried start does not start another)")
  ),
  json
}

const probe = Command.make("probe", probeConfig, (args) => impl((m) => m.probe(args))).pipe(
  Command.withDescription("Start a durable FleetProbe of a host in the control plane (registry, reach, report)")
)

export const probeStatusConfig = { executionId: Args.text({ name: "EXECUTION_ID" }), json }

const probeStatus = Command.make("probe-status", probeStatusConfig, (args) => impl((m) => m.probeStatus(args))).pipe(
  Command.withDescription("A FleetProbe run's state: running, succeeded (exit 0) or failed (exit 1)")
)

export const fleet = Command.make("fleet").pipe(
  Command.withDescription("Work the control plane runs for the fleet (a client of its HTTP API)"),
  Command.withSubcommands([probe, probeStatus]),
  Command.provide(FleetConfigLive)
)
