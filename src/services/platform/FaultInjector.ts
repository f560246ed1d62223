import * as fs from "node:fs"
import { Config, Context, Effect, Layer } from "effect"

/**
 * Where a durable workflow's crash tests break it on purpose (the handoff's steps, docs/handoff.md). Production
 * code asks this port at each step's end; the live answer is "never", so nothing is read per step.
 */
export class FaultInjector extends Context.Tag("platform/FaultInjector")<
  FaultInjector,
  {
    /**
     * Right after `step` did its work and before the workflow engine recorded it — the worst moment, so the step
     * runs again on resume — SIGKILL this process, once: a marker file in `dir` remembers it happened.
     */
    readonly crashAfter: (dir: string, step: string) => Effect.Effect<void>
    /** Whether `step` fails on purpose after its work. */
    readonly failsAt: (step: string) => boolean
  }
>() {}

const none: FaultInjector["Type"] = { crashAfter: () => Effect.void, failsAt: () => false }

/** No fault is ever injected. */
export const FaultInjectorNone = Layer.succeed(FaultInjector, none)

/**
 * TEST-ONLY settings, read once when the layer is built: with `KEEL_FAULT_INJECTION=1`, `KEEL_HANDOFF_CRASH_AT=<step>`
 * kills the process after that step (once) and `KEEL_HANDOFF_FAIL_AT=<step>` fails that step. The crash tests run
 * real `ctl` processes, so the shipped layers build this one; without `KEEL_FAULT_INJECTION=1` it is
 * `FaultInjectorNone`. Never set these in production.
 */
export const FaultInjectorFromTestSettings = Layer.effect(
  FaultInjector,
  Effect.gen(function* () {
    const enabled = yield* Config.string("KEEL_FAULT_INJECTION").pipe(Config.withDefault(""))
    if (enabled !== "1") return none
    const crashAt = yield* Config.string("KEEL_HANDOFF_CRASH_AT").pipe(Config.withDefault(""))
    const failAt = yield* Config.string("KEEL_HANDOFF_FAIL_AT").pipe(Config.withDefault(""))
    return {
      crashAfter: (dir: string, step: string) =>
        step !== crashAt
          ? Effect.void
          : Effect.suspend(() => {
              const marker = `${dir}/crashed-at-${step}`
              if (fs.existsSync(marker)) return Effect.void
              fs.mkdirSync(dir, { recursive: true })
              fs.writeFileSync(marker, `${process.pid}\n`)
              process.kill(process.pid, "SIGKILL")
              return Effect.never
            }),
      failsAt: (step: string) => step === failAt
    }
  }).pipe(Effect.orDie)
)
