import * as os from "node:os"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option, Schedule } from "effect"
import { HostOpsLive, ServicesLive } from "../layers/Live.js"
import { Janitor } from "../services/fleet/janitor/Janitor.js"
import { JobDiagnosis } from "../services/fleet/jobs/JobDiagnosis.js"
import { JobQueue } from "../services/fleet/jobs/JobQueue.js"
import { jobView } from "../services/fleet/jobs/JobView.js"
import { JobWorker } from "../services/fleet/jobs/JobWorker.js"
import type { SelectedProfile } from "../services/fleet/providers/ProviderProfile.js"
import { emit, failWith, integerOption, json } from "./Output.js"

const jobId = Args.text({ name: "JOB_ID" })

const submit = Command.make(
  "submit",
  {
    target: Args.text({ name: "TARGET" }),
    command: Args.text({ name: "COMMAND" }).pipe(Args.atLeast(1)),
    idempotencyKey: Options.text("idempotency-key").pipe(
      Options.optional,
      Options.withDescription("Submitting again with the same key answers the same job instead of queueing another")
    ),
    json
  },
  ({ command, idempotencyKey, json, target }) =>
    Effect.gen(function* () {
      const job = yield* (yield* JobWorker)
        .submit({ target, argv: command, idempotencyKey: Option.getOrUndefined(idempotencyKey) })
        .pipe(Effect.catchAll(failWith(json)))
      yield* emit(json, jobView(job), (j) => j.id)
    })
).pipe(
  Command.withDescription(
    "Queue a command to run on a registry target: ctl machine submit [--json] TARGET -- ARGV… (options before --)"
  )
)

/** Which provider diagnostics were offered: the selected profile's, or why none. */
const profileLine = (profile: SelectedProfile) =>
  profile.error !== null
    ? `provider diagnostics: none (${profile.error})`
    : profile.name === null
      ? "provider diagnostics: none (no profile selected)"
      : `provider diagnostics: profile ${profile.name}: ${profile.providers.join(", ") || "no provider"}`

const status = Command.make("status", { id: jobId, json }, ({ id, json }) =>
  Effect.gen(function* () {
    const { diagnosis, job } = yield* (yield* JobDiagnosis).status(id).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, { ...jobView(job), diagnosis }, (j) =>
      [
        `${j.id} ${j.state} on ${j.target} (attempt ${j.attempt})${j.exit_code === null ? "" : `, exit ${j.exit_code}`}`,
        `  ${j.argv.join(" ")}`,
        `  created ${j.created_at}${j.started_at === null ? "" : `, started ${j.started_at}`}${
          j.finished_at === null ? "" : `, finished ${j.finished_at}`
        }${j.duration_ms === null ? "" : ` (${(j.duration_ms / 1000).toFixed(1)} s)`}`,
        ...(j.error === null ? [] : [`  error: ${j.error}`]),
        ...(j.diagnosis === null
          ? []
          : j.diagnosis.id === "unknown"
            ? ["  diagnosis: unknown (no known failure in the output)"]
            : [`  diagnosis: ${j.diagnosis.id}: ${j.diagnosis.cause}`, `  remedy: ${j.diagnosis.remedy}`]),
        ...(j.diagnosis === null ? [] : [`  ${profileLine(j.diagnosis.profile)}`])
      ].join("\n")
    )
  })
).pipe(Command.withDescription("A job's state, timings, exit code and, when it failed, the diagnosis"))

const logs = Command.make(
  "logs",
  {
    id: jobId,
    cursor: integerOption("cursor", 0).pipe(Options.withDefault(0)),
    limit: integerOption("limit", 1, 10_000).pipe(Options.withDefault(200)),
    follow: Options.boolean("follow").pipe(Options.withDescription("Keep printing until the job ends")),
    json
  },
  ({ cursor, follow, id, json, limit }) =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      yield* queue.get(id).pipe(Effect.catchAll(failWith(json)))
      let next = cursor
      for (;;) {
        const page = yield* queue.output(id, next, limit)
        // The same field names as GET /api/fleet/jobs/<id>/output answers.
        if (json)
          yield* emit(
            true,
            {
              lines: page.lines.map((l) => ({ line_no: l.lineNo, stream: l.stream, line: l.line })),
              next_cursor: page.next
            },
            () => ""
          )
        else for (const line of page.lines) yield* emit(false, line.line, (l) => l)
        next = page.next
        if (!follow) {
          // Where the next page starts, on stderr: the output lines on stdout stay exactly the job's.
          if (!json) yield* Console.error(`next cursor: ${page.next}`)
          return
        }
        if (page.lines.length === 0) {
          const job = yield* queue.get(id).pipe(Effect.orDie)
          if (job.state !== "queued" && job.state !== "running") {
            const rest = yield* queue.output(id, next, 10_000)
            if (rest.lines.length === 0) return
            continue
          }
          yield* Effect.sleep("300 millis")
        }
      }
    })
).pipe(Command.withDescription("A page of a job's output lines after --cursor, and the next cursor"))

const work = Command.make(
  "work",
  {
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
  },
  ({ concurrency, janitor, json, tick, untilEmpty, worker }) =>
    Effect.gen(function* () {
      if (janitor) {
        // The same pass, lock and state file as the watch timer: the two writers never collide.
        const pass = Effect.flatMap(Janitor, (j) => j.pass({ writer: "queue-agent" })).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("janitor tick failed", cause))
        )
        if (untilEmpty) yield* pass
        else yield* Effect.forkScoped(Effect.repeat(pass, Schedule.spaced(`${tick} seconds`)))
      }
      const ran = yield* (yield* JobWorker)
        .work({ worker, concurrency, untilEmpty })
        .pipe(Effect.catchTags({ WorkerEnvironmentExposed: failWith(json), WorkerJobUserRefused: failWith(json) }))
      yield* emit(json, { worker, ran }, (r) => `${r.worker} ran ${r.ran} job(s)`)
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("Run queued jobs through the host channel (and, with --janitor, the disk janitor)"))

const control = (name: "pause" | "resume") =>
  Command.make(name, { json }, ({ json }) =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      yield* name === "pause" ? queue.pause : queue.resume
      const stats = yield* queue.stats
      // snake_case like every other answer: the queue's own stats are camelCase inside the service.
      const answer = { paused: stats.paused, counts: stats.counts, oldest_queued_age_ms: stats.oldestQueuedAgeMs }
      yield* emit(json, answer, (s) => `queue ${s.paused ? "paused" : "running"}: ${JSON.stringify(s.counts)}`)
    })
  ).pipe(Command.withDescription(name === "pause" ? "Stop workers from claiming jobs" : "Let workers claim jobs again"))

export const machine = Command.make("machine").pipe(
  Command.withDescription("The job queue: submit, inspect, diagnose, run"),
  Command.withSubcommands([
    submit.pipe(Command.provide(HostOpsLive)),
    status.pipe(Command.provide(ServicesLive)),
    logs.pipe(Command.provide(ServicesLive)),
    control("pause").pipe(Command.provide(ServicesLive)),
    control("resume").pipe(Command.provide(ServicesLive)),
    work.pipe(Command.provide(HostOpsLive))
  ])
)
