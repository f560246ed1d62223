import { Console, Effect, Option, Schedule } from "effect"
import { Janitor } from "../../services/fleet/agent/janitor/Janitor.js"
import { JobWorker } from "../../services/fleet/agent/jobs/JobWorker.js"
import { JobDiagnosis } from "../../services/fleet/control/jobs/JobDiagnosis.js"
import { jobView } from "../../services/fleet/control/jobs/JobView.js"
import type { SelectedProfile } from "../../services/fleet/control/providers/ProviderProfile.js"
import { JobQueue } from "../../services/fleet/shared/jobs/JobQueue.js"
import type { Parsed } from "../Lazy.js"
import type { logsConfig, statusConfig, submitConfig, workConfig } from "../machine.js"
import { emit, failWith } from "../Output.js"

/** Which provider diagnostics were offered: the selected profile's, or why none. */
const profileLine = (profile: SelectedProfile) =>
  profile.error !== null
    ? `provider diagnostics: none (${profile.error})`
    : profile.name === null
      ? "provider diagnostics: none (no profile selected)"
      : `provider diagnostics: profile ${profile.name}: ${profile.providers.join(", ") || "no provider"}`

export const submit = ({ command, idempotencyKey, json, target }: Parsed<typeof submitConfig>) =>
  Effect.gen(function* () {
    const job = yield* (yield* JobWorker)
      .submit({ target, argv: command, idempotencyKey: Option.getOrUndefined(idempotencyKey) })
      .pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, jobView(job), (j) => j.id)
  })

export const status = ({ id, json }: Parsed<typeof statusConfig>) =>
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

export const logs = ({ cursor, follow, id, json, limit }: Parsed<typeof logsConfig>) =>
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

export const work = ({ concurrency, janitor, json, tick, untilEmpty, worker }: Parsed<typeof workConfig>) =>
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

export const control = (name: "pause" | "resume", { json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const queue = yield* JobQueue
    yield* name === "pause" ? queue.pause : queue.resume
    const stats = yield* queue.stats
    // snake_case like every other answer: the queue's own stats are camelCase inside the service.
    const answer = { paused: stats.paused, counts: stats.counts, oldest_queued_age_ms: stats.oldestQueuedAgeMs }
    yield* emit(json, answer, (s) => `queue ${s.paused ? "paused" : "running"}: ${JSON.stringify(s.counts)}`)
  })
