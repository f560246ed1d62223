import { Command, Options } from "@effect/cli"
import { ReconcilerOpsLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/optimize.js"))

const run = Command.make("run", { json }, (args) => impl((m) => m.run(args))).pipe(
  Command.withDescription(
    "Run one reconciliation tick now, in the control plane when KEEL_CONTROL_PLANE_URL is set (exit 1 if an action failed)"
  )
)

const status = Command.make("status", { json }, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription("The reconciler's mode, pause, breakers and latest run")
)

const reason = Options.text("reason").pipe(Options.optional, Options.withDescription("Why (kept with the pause)"))
const by = Options.text("by").pipe(
  Options.withDefault(process.env.USER ?? "operator"),
  Options.withDescription("Who pauses or resumes")
)

export const pauseConfig = { reason, by, json }

const pause = Command.make("pause", pauseConfig, (args) => impl((m) => m.pause(args))).pipe(
  Command.withDescription("Emergency pause: every process's ticks record their plan and execute nothing")
)

export const resumeConfig = { by, json }

const resume = Command.make("resume", resumeConfig, (args) => impl((m) => m.resume(args))).pipe(
  Command.withDescription("End the emergency pause")
)

export const optimize = Command.make("optimize").pipe(
  Command.withDescription("The service reconciler: run a tick, show its state, pause or resume it"),
  Command.withSubcommands([status, run, pause, resume]),
  Command.provide(ReconcilerOpsLive)
)
