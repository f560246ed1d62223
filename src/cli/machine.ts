import * as os from "node:os"
import { Args, Command, Options } from "@effect/cli"
import { FleetServicesLive, HostOpsLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/machine.js"))

const jobId = Args.text({ name: "JOB_ID" })

export const submitConfig = {
  target: Args.text({ name: "TARGET" }),
  command: Args.text({ name: "COMMAND" }).pipe(Args.atLeast(1)),
  idempotencyKey: Options.text("idempotency-key").pipe(
    Options.optional,
    Options.withDescription("Submitting again with the same key answers the same job instead of queueing another")
  ),
  json
}

const submit = Command.make("submit", submitConfig, (args) => impl((m) => m.submit(args))).pipe(
  Command.withDescription(
    "Queue a command to run on a registry target: ctl machine submit [--json] TARGET -- ARGV… (options before --)"
  )
)

export const statusConfig = { id: jobId, json }

const status = Command.make("status", statusConfig, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription("A job's state, timings, exit code and, when it failed, the diagnosis")
)

export const logsConfig = {
  id: jobId,
  cursor: integerOption("cursor", 0).pipe(Options.withDefault(0)),
  limit: integerOption("limit", 1, 10_000).pipe(Options.withDefault(200)),
  follow: Options.boolean("follow").pipe(Options.withDescription("Keep printing until the job ends")),
  json
}

const logs = Command.make("logs", logsConfig, (args) => impl((m) => m.logs(args))).pipe(
  Command.withDescription("A page of a job's output lines after --cursor, and the next cursor")
)

export const workConfig = {
  concurrency: integerOption("concurrency", 1, 64).pipe(Options.withDefault(2)),
  untilEmpty: Options.boolean("until-empty").pipe(Options.withDescription("Stop when nothing is claimable")),
  worker: Options.text("worker").pipe(Options.withDefault(`${os.hostname()}-${process.pid}`)),
  janitor: Options.boolean("janitor").pipe(
    Options.withDescription(
      "Also run the disk janitor on each tick (writer queue-agent; its policy's interval gates it)"
    )
  ),
  tick: integerOption("tick", 1, 86_400).pipe(
    Options.withDefault(60),
    Options.withDescription("Seconds between janitor ticks")
  ),
  json
}

const work = Command.make("work", workConfig, (args) => impl((m) => m.work(args))).pipe(
  Command.withDescription("Run queued jobs through the host channel (and, with --janitor, the disk janitor)")
)

const control = (name: "pause" | "resume") =>
  Command.make(name, { json }, (args) => impl((m) => m.control(name, args))).pipe(
    Command.withDescription(name === "pause" ? "Stop workers from claiming jobs" : "Let workers claim jobs again")
  )

export const machine = Command.make("machine").pipe(
  Command.withDescription("The job queue: submit, inspect, diagnose, run"),
  Command.withSubcommands([
    submit.pipe(Command.provide(HostOpsLive)),
    status.pipe(Command.provide(FleetServicesLive)),
    logs.pipe(Command.provide(FleetServicesLive)),
    control("pause").pipe(Command.provide(FleetServicesLive)),
    control("resume").pipe(Command.provide(FleetServicesLive)),
    work.pipe(Command.provide(HostOpsLive))
  ])
)
