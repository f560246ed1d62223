import * as path from "node:path"
import { Config, Duration, Effect, Fiber, Option, Schedule } from "effect"
import { AppConfig } from "../../platform/AppConfig.js"
import { HostChannel } from "../../platform/hostchannel/HostChannel.js"
import { channelSpec } from "../Channels.js"
import { FleetRegistry } from "../registry/Registry.js"
import type { Target } from "../registry/Schema.js"
import { type Job, JobQueue } from "./JobQueue.js"

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

/**
 * Runs queued jobs through the host channel: claim, run on the job's target with its lease renewed
 * while it runs, store the output as ordered lines as it arrives, record the outcome.
 */
export class JobWorker extends Effect.Service<JobWorker>()("fleet/JobWorker", {
  effect: Effect.gen(function* () {
    const queue = yield* JobQueue
    const channel = yield* HostChannel
    const registry = yield* FleetRegistry
    const app = yield* AppConfig
    const leaseMillis = Duration.toMillis(
      yield* Config.duration("KEEL_JOB_LEASE").pipe(Config.withDefault(Duration.seconds(60)))
    )
    const knownHosts = Option.getOrElse(yield* Config.option(Config.string("KEEL_SSH_KNOWN_HOSTS")), () =>
      path.join(app.dataDir, "known_hosts")
    )

    const execute = (job: Job, targets: ReadonlyMap<string, Target>, worker: string) =>
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
        const flush = (final: boolean) => queue.appendOutput(job.id, buffer.take(final))
        const keeper = yield* Effect.fork(
          Effect.repeat(
            Effect.zipRight(flush(false), queue.renew(job.id, worker, leaseMillis)),
            Schedule.spaced(Duration.millis(Math.max(100, Math.min(1_000, leaseMillis / 3))))
          )
        )
        const result = yield* channel
          .run(channelSpec(target, knownHosts), {
            argv: job.argv,
            timeoutMs: 6 * 3_600_000,
            onOutput: (stream, chunk) => buffer.push(stream, chunk)
          })
          .pipe(Effect.either)
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

    /**
     * Claims and runs jobs with `concurrency` slots until the queue has nothing claimable (when
     * `untilEmpty`) or forever, polling every `pollMillis` when idle. Answers how many it ran.
     */
    const work = Effect.fn("JobWorker.work")(function* (options: {
      readonly worker: string
      readonly concurrency: number
      readonly untilEmpty: boolean
      readonly pollMillis?: number
    }) {
      const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.orElseSucceed(() => undefined))
      const targets = new Map((snapshot?.registry.targets ?? []).map((t) => [t.name, t] as const))
      let ran = 0
      const slot = Effect.gen(function* () {
        for (;;) {
          const job = yield* queue.claim(options.worker, leaseMillis)
          if (Option.isNone(job)) {
            if (options.untilEmpty) return
            yield* Effect.sleep(options.pollMillis ?? 500)
            continue
          }
          yield* execute(job.value, targets, options.worker)
          ran++
        }
      })
      yield* Effect.all(
        Array.from({ length: options.concurrency }, () => slot),
        { concurrency: "unbounded" }
      )
      return ran
    })

    return { work } as const
  })
}) {}
