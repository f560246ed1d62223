import { execFileSync } from "node:child_process"
import { Cause, Config, Data, Duration, Effect, Fiber, Option, Schedule } from "effect"
import { childEnv } from "../../../platform/ChildEnv.js"
import { durationSetting } from "../../../platform/DurationSetting.js"
import { environScrubOutcome, exposedEnvironNames } from "../../../platform/EnvironBlock.js"
import { HostChannel, type RunAs } from "../../../platform/hostchannel/HostChannel.js"
import { channelSpec } from "../../shared/Channels.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { type Job, JobQueue } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"

/** Splits streamed chunks into whole lines per stream; `flush` hands over what is complete. */
const lineBuffer = () => {
  const partial = { stdout: "", stderr: "" }
  let complete: Array<{ stream: "stdout" | "stderr"; line: string }> = []
  const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() }
  return {
    push: (stream: "stdout" | "stderr", chunk: Uint8Array) => {
      const text = partial[stream] + decoder[stream].decode(chunk, { stream: true })
      const lines = text.split("\n")
      partial[stream] = lines.pop() ?? ""
      for (const line of lines) complete.push({ stream, line })
    },
    take: (final: boolean) => {
      if (final) {
        for (const stream of ["stdout", "stderr"] as const) {
          if (partial[stream] !== "") complete.push({ stream, line: partial[stream] })
          partial[stream] = ""
        }
      }
      const taken = complete
      complete = []
      return taken
    }
  }
}

/** A job for a target the registry does not declare. */
export class UnknownTarget extends Data.TaggedError("UnknownTarget")<{
  readonly target: string
  readonly detail: string
}> {}

/**
 * This worker's environment block (`/proc/<pid>/environ`, readable by every job it runs under its own user) still
 * shows variables a job may not see: the start-up scrub could not overwrite them. No job runs beside it.
 */
export class WorkerEnvironmentExposed extends Data.TaggedError("WorkerEnvironmentExposed")<{
  readonly code: "WORKER_ENVIRONMENT_EXPOSED"
  readonly detail: string
}> {}

/** KEEL_JOB_USER names no user of this host, or this worker cannot switch to it (it is not root). */
export class WorkerJobUserRefused extends Data.TaggedError("WorkerJobUserRefused")<{
  readonly code: "WORKER_JOB_USER_REFUSED"
  readonly detail: string
}> {}

/** The user `name` (or uid) from the host's user database (`getent passwd`, so NSS users count too). */
const lookUpUser = (name: string) =>
  Effect.try({
    try: () => execFileSync("getent", ["passwd", name], { env: childEnv(), encoding: "utf8" }).split("\n")[0] ?? "",
    catch: () =>
      new WorkerJobUserRefused({
        code: "WORKER_JOB_USER_REFUSED",
        detail: `KEEL_JOB_USER: no user ${name} on this host`
      })
  }).pipe(
    Effect.flatMap((line) => {
      const [user = "", , uid = "", gid = "", , home = "/"] = line.split(":")
      return /^\d+$/.test(uid) && /^\d+$/.test(gid)
        ? Effect.succeed({ user, uid: Number(uid), gid: Number(gid), home } satisfies RunAs)
        : Effect.fail(
            new WorkerJobUserRefused({
              code: "WORKER_JOB_USER_REFUSED",
              detail: `KEEL_JOB_USER: no user ${name} on this host`
            })
          )
    })
  )

/**
 * Runs queued jobs through the host channel: claim, run on the job's target with its lease renewed
 * while it runs, store the output as ordered lines as it arrives, record the outcome.
 */
export class JobWorker extends Effect.Service<JobWorker>()("fleet/JobWorker", {
  effect: Effect.gen(function* () {
    const queue = yield* JobQueue
    const channel = yield* HostChannel
    const registry = yield* FleetRegistry
    const leaseMillis = Duration.toMillis(
      yield* durationSetting("KEEL_JOB_LEASE").pipe(Config.withDefault(Duration.seconds(60)))
    )
    // Jobs of local targets run as this user instead of the worker's (docs/security.md).
    const jobUser = yield* Config.option(Config.nonEmptyString("KEEL_JOB_USER"))
    const { knownHosts } = yield* FleetConfig

    /** The user local jobs run as: none when KEEL_JOB_USER is unset; refused when this worker cannot become it. */
    const resolveJobUser = Effect.gen(function* () {
      if (Option.isNone(jobUser)) return undefined
      const runAs = yield* lookUpUser(jobUser.value)
      const own = process.getuid?.()
      if (own !== undefined && own !== 0 && own !== runAs.uid)
        return yield* new WorkerJobUserRefused({
          code: "WORKER_JOB_USER_REFUSED",
          detail: `KEEL_JOB_USER=${jobUser.value}: running jobs as another user needs a worker running as root (this one is uid ${own})`
        })
      return runAs
    })

    const execute = (job: Job, targets: ReadonlyMap<string, Target>, worker: string, runAs: RunAs | undefined) =>
      Effect.gen(function* () {
        const target = targets.get(job.target)
        if (target === undefined) {
          yield* queue.complete(job.id, worker, {
            exitCode: null,
            error: `${job.target} is not a target of the registry`
          })
          return
        }
        const buffer = lineBuffer()
        const flush = (final: boolean) => queue.appendOutput(job.id, buffer.take(final), worker)
        // Renews the lease while the job runs; ends when the lease is found lost (this worker was paused or cut
        // off past it, and another worker's attempt took the job over). A failed renewal is not a loss: the
        // next one decides.
        const keeper = yield* Effect.fork(
          Effect.repeat(
            Effect.zipRight(
              flush(false).pipe(Effect.ignore),
              queue.renew(job.id, worker, leaseMillis).pipe(Effect.orElseSucceed(() => true))
            ),
            {
              schedule: Schedule.spaced(Duration.millis(Math.max(100, Math.min(1_000, leaseMillis / 3)))),
              until: (held) => !held
            }
          )
        )
        const run = channel
          .run(channelSpec(target, knownHosts), {
            argv: job.argv,
            runAs,
            timeoutMs: 6 * 3_600_000,
            onOutput: (stream, chunk) => buffer.push(stream, chunk)
          })
          .pipe(Effect.either)
        // The process stops the moment the lease is lost: the job is the new attempt's, never run twice at once.
        const outcome = yield* Effect.raceFirst(
          Effect.map(run, (result) => ({ lost: false as const, result })),
          Effect.as(Fiber.join(keeper), { lost: true as const })
        )
        if (outcome.lost) {
          yield* Effect.logWarning(
            "job lease lost: its process was stopped; the attempt that took over owns the job"
          ).pipe(Effect.annotateLogs({ job: job.id, worker }))
          return
        }
        const result = outcome.result
        yield* Fiber.interrupt(keeper)
        yield* flush(true)
        if (result._tag === "Left") {
          yield* queue.complete(job.id, worker, { exitCode: null, error: result.left.detail })
          return
        }
        yield* queue.complete(job.id, worker, {
          exitCode: result.right.exitCode,
          error: result.right.timedOut ? "timed out" : undefined
        })
      })

    /** The registry's targets now (a cached copy when the source cannot be read; none when nothing can). */
    const readTargets = registry.read({ allowCached: true }).pipe(
      Effect.map((snapshot) => new Map(snapshot.registry.targets.map((t) => [t.name, t] as const))),
      Effect.orElseSucceed(() => new Map<string, Target>())
    )

    /**
     * Claims and runs jobs with `concurrency` slots until the queue has nothing claimable (when
     * `untilEmpty`) or forever, polling every `pollMillis` when idle. Answers how many it ran.
     *
     * A transient failure (the database busy past its timeout and retries, a channel error) is logged and
     * the slot tries again after a jittered backoff: the worker never exits on one. When the worker stops
     * (interrupted, or failed for good), the jobs it still holds are released to the queue at once instead
     * of waiting for their leases to expire. A job for a target the worker does not know makes it read the
     * registry again first (a target added after the worker started).
     */
    const work = Effect.fn("JobWorker.work")(function* (options: {
      readonly worker: string
      readonly concurrency: number
      readonly untilEmpty: boolean
      readonly pollMillis?: number
    }) {
      // A job reads its parent's environment block through /proc/$PPID/environ: it must show no secret.
      const exposed = exposedEnvironNames()
      if (exposed.length > 0) {
        const why = environScrubOutcome().error
        return yield* new WorkerEnvironmentExposed({
          code: "WORKER_ENVIRONMENT_EXPOSED",
          detail: `this worker's /proc/${process.pid}/environ still shows ${exposed.join(", ")}${why === undefined ? "" : ` (${why})`}; a job could read them: give secrets through files (KEEL_VAULT_KEY_FILE) instead of the environment`
        })
      }
      const runAs = yield* resolveJobUser
      let targets = yield* readTargets
      const held = new Set<string>()
      let ran = 0
      const step = Effect.gen(function* () {
        const claimed = yield* queue.claim(options.worker, leaseMillis)
        if (Option.isNone(claimed)) return "empty" as const
        const job = claimed.value
        held.add(job.id)
        if (!targets.has(job.target)) targets = yield* readTargets
        yield* execute(job, targets, options.worker, runAs)
        held.delete(job.id)
        ran++
        return "ran" as const
      })
      const slot = Effect.gen(function* () {
        let failures = 0
        for (;;) {
          const outcome = yield* step.pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.logWarning("job worker: a transient failure; trying again").pipe(
                    Effect.annotateLogs("cause", Cause.pretty(cause)),
                    Effect.as("failed" as const)
                  )
            )
          )
          if (outcome === "failed") {
            failures++
            const backoff = Math.min(5_000, 100 * 2 ** Math.min(failures, 6))
            yield* Effect.sleep(Duration.millis(backoff / 2 + Math.random() * (backoff / 2)))
            continue
          }
          failures = 0
          if (outcome === "empty") {
            if (options.untilEmpty) return
            yield* Effect.sleep(options.pollMillis ?? 500)
          }
        }
      })
      // Read when the worker stops: whatever it still holds then.
      const releaseHeld = Effect.suspend(() =>
        Effect.forEach([...held], (id) => queue.release(id, options.worker).pipe(Effect.ignore), { discard: true })
      )
      yield* Effect.all(
        Array.from({ length: options.concurrency }, () => slot),
        { concurrency: "unbounded" }
      ).pipe(Effect.ensuring(releaseHeld))
      return ran
    })

    /**
     * Queues a command for a target the registry declares; an unknown target is refused now (with the
     * targets there are), not failed later when a worker picks it up.
     */
    const submit = (job: {
      readonly target: string
      readonly argv: ReadonlyArray<string>
      readonly idempotencyKey?: string | undefined
    }) =>
      Effect.gen(function* () {
        const known = yield* readTargets
        if (!known.has(job.target))
          return yield* new UnknownTarget({
            target: job.target,
            detail: `${job.target} is not a target of the registry${known.size === 0 ? " (no registry could be read)" : ` (targets: ${[...known.keys()].join(", ")})`}`
          })
        return yield* queue.submit({
          kind: "command",
          target: job.target,
          argv: job.argv,
          idempotencyKey: job.idempotencyKey
        })
      })

    return { work, submit } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
