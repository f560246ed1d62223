import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as Yaml from "yaml"
import { RUN_STEPS } from "../support/handoff.js"
import {
  type FinalizedReceipt,
  type HandoffReceipt,
  HandoffTest,
  handoffReceipt,
  JobQueue,
  Leases,
  makeMemoryServiceManager,
  manifestOf,
  manifestsEqual,
  ObjectGateway,
  planUnion,
  STORAGE_FENCE_KEY,
  StorageHandoffRollback,
  StorageHandoffRun,
  StorageReconcile
} from "../support/keel.js"

// Issue 18: the storage-root handoff as durable workflows on the target — Run from capture to release with the
// winner fixed at the fenced preflight, the union built on A, the runtime and route switched, writers and queue
// restored as captured; Rollback before the data-commit boundary restores everything, after it is refused.

const write = (root: string, relative: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(root, relative)), { recursive: true })
  fs.writeFileSync(path.join(root, relative), text)
}

/** A host with two roots, the route and runtime on `serving`, an api writer running, jobs queued. */
const host = (serving: "a" | "b", env: Record<string, string> = {}) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-"))
  const a = path.join(dir, "objects-a")
  const b = path.join(dir, "objects-b")
  write(a, "objects/shared.json", "A's")
  write(a, "objects/a-only.json", "a")
  write(b, "objects/shared.json", "B's, newer")
  write(b, "objects/b-only/deep.json", "b")
  fs.mkdirSync(path.join(b, "empty"))
  fs.symlinkSync("shared.json", path.join(b, "objects/latest"))
  const route = path.join(dir, "objects.route")
  fs.writeFileSync(route, `${serving === "a" ? a : b}\n`)
  const runtime = path.join(dir, "current")
  fs.symlinkSync(serving === "a" ? a : b, runtime)
  const registry = path.join(dir, "registry.yml")
  fs.writeFileSync(
    registry,
    Yaml.stringify({
      version: 1,
      targets: [
        {
          name: "box",
          os: "linux",
          channel: "local",
          services: [
            {
              name: "api",
              unit: "/etc/systemd/system/keel-api.service",
              program: "/usr/local/bin/ctl",
              args: ["serve"]
            }
          ],
          storage: {
            roots: { a, b },
            route_file: route,
            writers: ["api"],
            runtime: { kind: "symlink", path: runtime },
            drain_timeout_seconds: 5
          }
        },
        { name: "other", os: "linux", channel: "local" },
        {
          name: "far",
          os: "linux",
          channel: { ssh: { host: "far.internal", user: "keel", identity_item: "fleet-ssh#private_key" } },
          storage: {
            roots: { a: "/srv/a", b: "/srv/b" },
            route_file: "/srv/route",
            runtime: { kind: "symlink", path: "/srv/current" }
          }
        }
      ]
    })
  )
  const services = makeMemoryServiceManager()
  services.set("/etc/systemd/system/keel-api.service", {
    load_state: "loaded",
    active_state: "active",
    sub_state: "running",
    main_pid: 10,
    exec_start: "/usr/local/bin/ctl serve",
    fragment_path: "/etc/systemd/system/keel-api.service",
    process: { pid: 10, executable: "/usr/local/bin/ctl", sha256: null },
    need_daemon_reload: false,
    unit_file_state: "enabled",
    invocation_id: "x",
    program_sha256: null
  })
  const data = path.join(dir, "data")
  const layer = HandoffTest({ dataDir: data }, services).pipe(
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ KEEL_REGISTRY: registry, ...env }))))
    )
  )
  return { dir, a, b, route, runtime, data, services, layer }
}

describe("Run", () => {
  for (const serving of ["a", "b"] as const)
    it.live(
      `builds the union for winner ${serving}, switches runtime and route to A, restores writers and queue`,
      () => {
        const h = host(serving)
        return Effect.gen(function* () {
          const queue = yield* JobQueue
          const queued = yield* queue.submit({ kind: "command", target: "box", argv: ["true"] })
          const elsewhere = yield* queue.submit({ kind: "command", target: "other", argv: ["true"] })
          const expected = planUnion(
            yield* Effect.promise(() => manifestOf(h.a)),
            yield* Effect.promise(() => manifestOf(h.b)),
            serving
          )

          const receipt = (yield* StorageHandoffRun.execute({
            target: "box",
            transaction: `t-${serving}`,
            attempt: 1
          })) as HandoffReceipt
          assert.strictEqual(receipt.state, "activated_pending_lifecycle")
          assert.strictEqual(receipt.winner, serving)
          assert.isTrue(receipt.data_committed)
          assert.deepStrictEqual(
            receipt.steps.map((s) => s.step),
            [...RUN_STEPS, "receipt"]
          )
          assert.isTrue(
            manifestsEqual(expected.expected, yield* Effect.promise(() => manifestOf(h.a))),
            "A is the union"
          )
          assert.strictEqual(
            fs.readFileSync(path.join(h.a, "objects/shared.json"), "utf8"),
            serving === "a" ? "A's" : "B's, newer"
          )
          assert.deepStrictEqual(receipt.retained, [...expected.retained])
          assert.strictEqual(fs.readlinkSync(h.runtime), h.a)
          assert.strictEqual(fs.readFileSync(h.route, "utf8").trim(), h.a)
          // The writer was stopped, then started again; the queue is as captured; the jobs queued there cancelled.
          assert.includeMembers([...h.services.commands], ["stop keel-api.service", "start keel-api.service"])
          assert.deepStrictEqual(yield* queue.targetPause("box"), { set: false })
          assert.deepStrictEqual(receipt.cancelled_jobs, [queued.id])
          assert.deepInclude(yield* queue.get(queued.id), {
            state: "cancelled",
            cancelReason: "handoff_cancelled",
            cancelRef: `t-${serving}`
          })
          assert.strictEqual((yield* queue.get(elsewhere.id)).state, "queued", "another target's queue never pauses")
          // The fence and the placements are released.
          assert.isTrue(Option.isNone(yield* (yield* Leases).get(STORAGE_FENCE_KEY)))
          assert.deepStrictEqual(handoffReceipt(h.data, `t-${serving}`)?.state, "activated_pending_lifecycle")

          // Past the data-commit boundary nothing rolls it back.
          const refused = yield* Effect.flip(
            StorageHandoffRollback.execute({ target: "box", transaction: `t-${serving}`, attempt: 1 })
          )
          assert.deepInclude(refused, { refusal: "past_data_commit_boundary" })
        }).pipe(Effect.provide(h.layer))
      }
    )
})

describe("Rollback before the data-commit boundary", () => {
  it.live(
    "restores A's checkpoint exactly, the route, the runtime, the writers and the queue, and releases the fence",
    () => {
      const h = host("b")
      // Something the handoff cannot move (a FIFO) stops the run at its checkpoint, with the fence held.
      execFileSync("mkfifo", [path.join(h.b, "objects/pipe")])
      return Effect.gen(function* () {
        const before = yield* Effect.promise(() => manifestOf(h.a))
        const queue = yield* JobQueue
        yield* queue.setTargetPause("box", { set: true, paused: false })
        const failed = yield* Effect.flip(
          StorageHandoffRun.execute({ target: "box", transaction: "t-fail", attempt: 1 })
        )
        assert.deepInclude(failed, { refusal: "checkpoint_failed" })
        assert.deepInclude(handoffReceipt(h.data, "t-fail"), { state: "failed", refusal: "checkpoint_failed" })
        assert.isTrue(
          Option.isSome(yield* (yield* Leases).get(STORAGE_FENCE_KEY)),
          "the open transaction keeps the fence"
        )
        const write = yield* Effect.flip((yield* ObjectGateway).putJson("state/during-handoff.json", { x: 1 }))
        assert.deepInclude(
          write,
          { _tag: "StorageFenced", holder: "handoff:t-fail" },
          "writers are refused under the fence"
        )
        assert.deepStrictEqual(yield* queue.targetPause("box"), { set: true, paused: true })

        const receipt = (yield* StorageHandoffRollback.execute({
          target: "box",
          transaction: "t-fail",
          attempt: 1
        })) as {
          state: string
        }
        assert.strictEqual(receipt.state, "rolled_back")
        assert.isTrue(manifestsEqual(before, yield* Effect.promise(() => manifestOf(h.a))))
        assert.strictEqual(fs.readFileSync(h.route, "utf8").trim(), h.b)
        assert.strictEqual(fs.readlinkSync(h.runtime), h.b)
        assert.deepStrictEqual(yield* queue.targetPause("box"), { set: true, paused: false }, "restored exactly")
        assert.strictEqual(h.services.commands.at(-1), "start keel-api.service")
        assert.isTrue(Option.isNone(yield* (yield* Leases).get(STORAGE_FENCE_KEY)))
      }).pipe(Effect.provide(h.layer))
    }
  )
})

describe("the phases (what the reconcile endpoints run)", () => {
  /** Status until the phase under way stops (at most 10 s). */
  const settled = (transaction: string) =>
    Effect.gen(function* () {
      const reconcile = yield* StorageReconcile
      for (let i = 0; i < 200; i++) {
        const status = yield* reconcile.phase("box", transaction, "status")
        if ((status.report as { state: string }).state !== "running") return status
        yield* Effect.sleep("50 millis")
      }
      const last = yield* reconcile.phase("box", transaction, "status")
      return assert.fail(`${transaction} is still running after 10 s: ${JSON.stringify(last)}`)
    })

  it.live(
    "Run is accepted (not completed), Status shows it, Finalize validates and completes; one transaction at a time",
    () => {
      const h = host("b")
      return Effect.gen(function* () {
        const reconcile = yield* StorageReconcile
        assert.deepInclude(yield* Effect.flip(reconcile.phase("box", "t1", "status")), {
          code: "STORAGE_RECONCILIATION_FAILED"
        })
        // A target reached over ssh is asked through its channel: unreachable is a 503 with the actual error, and
        // it leaves no transaction open on the control plane.
        const far = yield* Effect.flip(reconcile.phase("far", "t-far", "run"))
        assert.strictEqual(far.code, "STORAGE_RECONCILIATION_FAILED")
        assert.match(far.detail, /far could not be asked: .*fleet-ssh/)
        assert.strictEqual((yield* Effect.flip(reconcile.phase("far", "t-far-2", "run"))).code, far.code)
        const waiting = yield* (yield* JobQueue).submit({ kind: "command", target: "box", argv: ["true"] })
        const accepted = yield* reconcile.phase("box", "t1", "run")
        assert.strictEqual(accepted.exit_code, 0)
        assert.deepInclude(accepted.report as object, { transaction: "t1", attempt: 1 })

        const other = yield* reconcile.phase("box", "t2", "run")
        assert.deepInclude(other, { exit_code: 2, refusal: "transaction_in_progress" })

        const done = yield* settled("t1")
        assert.deepInclude(done, { exit_code: 0, refusal: null })
        assert.strictEqual((done.report as { state: string }).state, "activated_pending_lifecycle")
        assert.deepInclude(yield* reconcile.phase("box", "t1", "rollback"), {
          exit_code: 2,
          refusal: "past_data_commit_boundary"
        })

        // A failed Finalize is recorded in the receipt (the last phase and why it failed), and may run again.
        const route = fs.readFileSync(h.route, "utf8")
        fs.writeFileSync(h.route, `${h.b}\n`)
        const refused = yield* reconcile.phase("box", "t1", "finalize")
        assert.deepInclude(refused, { exit_code: 1, refusal: "finalize_checks_failed" })
        const recorded = (yield* reconcile.phase("box", "t1", "status")).report as {
          phase: string
          state: string
          refusal: string | null
          detail: string | null
          finalize: { ok: boolean }
        }
        assert.deepInclude(recorded, {
          phase: "finalize",
          state: "activated_pending_lifecycle",
          refusal: "finalize_checks_failed",
          detail: "the route is not on A"
        })
        assert.isFalse(recorded.finalize.ok)
        fs.writeFileSync(h.route, route)

        const final = yield* reconcile.phase("box", "t1", "finalize")
        assert.strictEqual(final.exit_code, 0, JSON.stringify(final.report))
        assert.deepInclude(final.report as object, { refusal: null, detail: null })
        const report = final.report as FinalizedReceipt
        assert.strictEqual(report.state, "complete")
        assert.isTrue(report.finalize.ok)
        assert.strictEqual(report.finalize.checks.route.actual, h.a)
        const outcomes = report.finalize.retained_outcomes
        assert.deepStrictEqual(outcomes.cancelled_jobs, [
          { id: waiting.id, state: "cancelled", cancel_reason: "handoff_cancelled", transaction: "t1" }
        ])
        assert.includeMembers(
          [...outcomes.retained],
          ["objects/a-only.json"],
          "A-only records newly authoritative (B served)"
        )
        // A later Status proves it; the target is free for another transaction.
        assert.strictEqual(
          ((yield* reconcile.phase("box", "t1", "status")).report as { state: string }).state,
          "complete"
        )
        assert.deepInclude(yield* reconcile.phase("box", "t1", "run"), {
          exit_code: 2,
          refusal: "transaction_complete"
        })
        const next = yield* reconcile.phase("box", "t3", "run")
        assert.strictEqual(next.exit_code, 0)
        yield* settled("t3")
      }).pipe(Effect.provide(h.layer))
    }
  )

  it.live(
    "a drain that outlasts its bound is refused with the queue restored; Resume runs it again once the job ended",
    () => {
      const h = host("b")
      return Effect.gen(function* () {
        const queue = yield* JobQueue
        const reconcile = yield* StorageReconcile
        const busy = yield* queue.submit({ kind: "command", target: "box", argv: ["sleep", "60"] })
        yield* queue.claim("worker-1", 600_000)
        yield* reconcile.phase("box", "t-busy", "run")
        const refused = yield* settled("t-busy")
        assert.deepInclude(refused, { exit_code: 2, refusal: "drain_timeout" })
        assert.deepStrictEqual(yield* queue.targetPause("box"), { set: false }, "the queue as captured")
        assert.isTrue(Option.isNone(yield* (yield* Leases).get(STORAGE_FENCE_KEY)), "the fence was never taken")
        yield* queue.complete(busy.id, "worker-1", { exitCode: 0 })
        const resumed = yield* reconcile.phase("box", "t-busy", "resume")
        assert.deepInclude(resumed.report as object, { attempt: 2 })
        assert.strictEqual(
          ((yield* settled("t-busy")).report as { state: string }).state,
          "activated_pending_lifecycle"
        )
      }).pipe(Effect.provide(h.layer))
    }
  )

  it.live(
    "a failed Run is reported failed (exit 1) and rolled back by the Rollback phase, which frees the target",
    () => {
      const h = host("a")
      execFileSync("mkfifo", [path.join(h.b, "objects/pipe")])
      return Effect.gen(function* () {
        const reconcile = yield* StorageReconcile
        yield* reconcile.phase("box", "t-bad", "run")
        const failed = yield* settled("t-bad")
        assert.deepInclude(failed, { exit_code: 1, refusal: "checkpoint_failed" })
        const rolling = yield* reconcile.phase("box", "t-bad", "rollback")
        assert.strictEqual(rolling.exit_code, 0)
        const rolled = yield* settled("t-bad")
        assert.strictEqual((rolled.report as { state: string }).state, "rolled_back")
        assert.deepInclude(yield* reconcile.phase("box", "t-bad", "resume"), {
          exit_code: 2,
          refusal: "transaction_rolled_back"
        })
        fs.rmSync(path.join(h.b, "objects/pipe"))
        const again = yield* reconcile.phase("box", "t-good", "run")
        assert.strictEqual(again.exit_code, 0, "the rollback ended the transaction")
        assert.strictEqual(
          ((yield* settled("t-good")).report as { state: string }).state,
          "activated_pending_lifecycle"
        )
      }).pipe(Effect.provide(h.layer))
    }
  )
})

describe("runners mode (docs/cluster.md, What runs where)", () => {
  it.live("a local target's phases are refused before anything: no machine is the control plane's own", () => {
    const h = host("a", { KEEL_CLUSTER_MODE: "runners" })
    return Effect.gen(function* () {
      const reconcile = yield* StorageReconcile
      for (const phase of ["run", "status", "rollback", "finalize"] as const) {
        const answer = yield* reconcile.phase("box", "t-runners", phase)
        assert.strictEqual(answer.exit_code, 2, phase)
        assert.strictEqual(answer.refusal, "local_target_in_runners_mode", phase)
      }
      // Nothing changed: no receipt, the route still on A, the writer still running, the fence free.
      assert.isNull(handoffReceipt(h.data, "t-runners"))
      assert.strictEqual(fs.readFileSync(h.route, "utf8").trim(), h.a)
      assert.isTrue(Option.isNone(yield* (yield* Leases).get(STORAGE_FENCE_KEY)))
    }).pipe(Effect.provide(h.layer))
  })
})
