import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Runtime, TestClock } from "effect"
import { janitorPolicy, janitorRegistry, janitorTestLayer, scriptedMeter } from "../support/janitor.js"
import { CACHEDIR_SIGNATURE, Janitor, removeBeneathEffect, resolveRoot } from "../support/keel.js"

/*
 * The pass takes its time from the Effect Clock (its start, the check interval, the pass deadline, the lock's
 * heartbeat), so TestClock drives rules that would otherwise need the real hour or half minute to pass.
 */

const GIB = 1024 ** 3
const DAY = 86_400_000
const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/** A signed cache directory, ten days old. */
const cacheDir = (dir: string) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${CACHEDIR_SIGNATURE}\n`)
  fs.writeFileSync(path.join(dir, "payload.bin"), Buffer.alloc(1024))
  const when = new Date(Date.now() - 10 * DAY)
  fs.utimesSync(dir, when, when)
  return dir
}

const registryWith = (dir: string, policy: Record<string, unknown>) => janitorRegistry(dir, "jan", policy)

const policy = janitorPolicy

describe("janitor time comes from the Effect Clock", () => {
  it.effect(
    "check_interval_seconds: interval_noop until the interval has passed on the clock, to the millisecond",
    () => {
      const dir = temp("keel-clock-")
      const build = path.join(dir, "build")
      fs.mkdirSync(build)
      return Effect.gen(function* () {
        // The TestClock starts at 1970; set it to now so the files' ages read as they do on the wall clock.
        const t0 = Date.now()
        yield* TestClock.setTime(t0)
        const janitor = yield* Janitor
        const first = yield* janitor.pass({ writer: "watch" })
        assert.strictEqual(first.outcome, "healthy_noop")
        assert.strictEqual(first.started_at, new Date(t0).toISOString())
        yield* TestClock.adjust("3599999 millis")
        assert.strictEqual((yield* janitor.pass({ writer: "watch" })).outcome, "interval_noop")
        yield* TestClock.adjust("1 millis")
        const due = yield* janitor.pass({ writer: "watch" })
        assert.strictEqual(due.outcome, "healthy_noop")
        assert.strictEqual(due.started_at, new Date(t0 + 3_600_000).toISOString())
        const state = JSON.parse(fs.readFileSync(path.join(janitor.stateDir, "state.json"), "utf8"))
        assert.strictEqual(state.last_pass_at, t0 + 3_600_000)
      }).pipe(
        Effect.provide(
          janitorTestLayer(
            { KEEL_REGISTRY: registryWith(dir, policy(build)) },
            scriptedMeter(() => 500 * GIB)
          )
        )
      )
    }
  )

  it.effect("max_pass_seconds: a deletion past the pass deadline stops with cap_reached and keeps the rest", () => {
    const dir = temp("keel-clock-")
    const build = path.join(dir, "build")
    const caches = ["a", "b", "c"].map((name) => cacheDir(path.join(build, name, "target")))
    return Effect.gen(function* () {
      const t0 = Date.now()
      yield* TestClock.setTime(t0)
      const janitor = yield* Janitor
      const runtime = yield* Effect.runtime<never>()
      // The first deletion "takes" 31 s of the pass's 30: the clock moves on inside the hook.
      let handled = 0
      const report = yield* janitor.pass({
        writer: "watch",
        toTarget: true,
        afterCandidate: () =>
          handled++ === 0 ? Runtime.runPromise(runtime)(TestClock.adjust("31 seconds")) : undefined
      })
      assert.strictEqual(report.outcome, "cap_reached")
      assert.deepStrictEqual(report.caps, ["max_pass_seconds"])
      assert.strictEqual(report.deleted.length, 1)
      assert.strictEqual(handled, 1)
      assert.deepStrictEqual(
        caches.map((c) => fs.existsSync(c)),
        caches.map((c) => c !== report.deleted[0]!.path)
      )
      assert.strictEqual(report.finished_at, new Date(t0 + 31_000).toISOString())
    }).pipe(
      Effect.provide(
        janitorTestLayer(
          { KEEL_REGISTRY: registryWith(dir, policy(build, { max_pass_seconds: 30 })) },
          scriptedMeter(() => 0)
        )
      )
    )
  })
})

describe("removeBeneath as an Effect", () => {
  it.effect("answers as removeBeneath does; a rejection is a typed RemovalFailed, not a defect", () =>
    Effect.gen(function* () {
      const dir = temp("keel-remove-")
      const victim = path.join(dir, "victim.bin")
      fs.writeFileSync(victim, "x")
      const root = resolveRoot(dir)
      assert.isTrue(root.ok)
      if (!root.ok) return
      const stat = fs.lstatSync(victim)
      const guards = { protectedIds: new Map<string, string>(), mountPoints: [] }
      const removed = yield* removeBeneathEffect({ root: root.root, target: victim, expected: stat }, guards)
      assert.deepStrictEqual(removed, { ok: true, bytes: 1 })
      assert.isFalse(fs.existsSync(victim))
      // A request removeBeneath cannot even read (no root) rejects: the Effect fails with the cause, typed.
      const broken = yield* Effect.either(
        removeBeneathEffect({ root: undefined as never, target: victim, expected: stat }, guards)
      )
      assert.isTrue(Either.isLeft(broken))
      if (Either.isLeft(broken)) {
        assert.strictEqual(broken.left._tag, "RemovalFailed")
        assert.strictEqual(broken.left.path, victim)
        assert.match(broken.left.reason, /^remove_failed: /)
      }
    })
  )
})
