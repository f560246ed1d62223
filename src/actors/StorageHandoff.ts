import * as fs from "node:fs"
import { Activity, Workflow, WorkflowEngine } from "@effect/workflow"
import { Clock, Config, Effect, Layer, Schema } from "effect"
import { HandoffEngine, type HandoffKind } from "../services/fleet/handoff/HandoffEngine.js"
import {
  type Captured,
  HandoffFiles,
  type HandoffReceipt,
  handoffDir,
  runtimeValue,
  transactionLeaseKey
} from "../services/fleet/handoff/HandoffFiles.js"
import { HandoffQueue } from "../services/fleet/handoff/HandoffQueue.js"
import { manifestOf, manifestsEqual } from "../services/fleet/handoff/TreeManifest.js"
import { applyUnion, checkpoint, planUnion, rollbackUnion } from "../services/fleet/handoff/TreeUnion.js"
import { FleetRegistry } from "../services/fleet/registry/Registry.js"
import type { Target } from "../services/fleet/registry/Schema.js"
import { ServiceManager } from "../services/fleet/units/ServiceManager.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { Leases } from "../services/platform/Leases.js"
import { readRoute, writeRoute } from "../services/platform/objects/RoutedFsObjectStore.js"
import { STORAGE_FENCE_KEY } from "../services/platform/objects/StorageFence.js"

/** A phase refused, with the seed's refusal reason (docs/handoff.md); state was restored where it had changed. */
export class HandoffRefused extends Schema.TaggedError<HandoffRefused>()("HandoffRefused", {
  code: Schema.Literal("HANDOFF_REFUSED"),
  refusal: Schema.String,
  detail: Schema.String
}) {}

/** `attempt` starts at 1; a Resume (or a Rollback after a failed one) runs the phase again as the next attempt. */
const Payload = { target: Schema.String, transaction: Schema.String, attempt: Schema.Int }
const Receipt = Schema.Unknown

/** Run: capture → placement leases → drain → stop writers → fence → preflight → checkpoint → union → data commit → activate → restore → release. */
export const StorageHandoffRun = Workflow.make({
  name: "StorageHandoffRun",
  payload: Payload,
  success: Receipt,
  error: HandoffRefused,
  idempotencyKey: ({ attempt, transaction }) => `run:${transaction}:${attempt}`
})

/** Rollback (before the data-commit boundary only): A back to its checkpoint, then route, runtime, services, queue. */
export const StorageHandoffRollback = Workflow.make({
  name: "StorageHandoffRollback",
  payload: Payload,
  success: Receipt,
  error: HandoffRefused,
  idempotencyKey: ({ attempt, transaction }) => `rollback:${transaction}:${attempt}`
})

export const placementKey = (root: string) => `placement:${root}`

/**
 * Fault injection for the crash tests (never set in production): with KEEL_FAULT_INJECTION=1 and
 * KEEL_HANDOFF_CRASH_AT=<step>, the process SIGKILLs itself once, right after that step did its work and before
 * the workflow engine recorded it — the worst moment, so the step runs again on resume.
 */
const crashPoint = (dir: string, step: string) =>
  Effect.gen(function* () {
    const enabled = yield* Config.string("KEEL_FAULT_INJECTION").pipe(Config.withDefault(""))
    const at = yield* Config.string("KEEL_HANDOFF_CRASH_AT").pipe(Config.withDefault(""))
    if (enabled !== "1" || at !== step) return
    const marker = `${dir}/crashed-at-${step}`
    if (fs.existsSync(marker)) return
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(marker, `${process.pid}\n`)
    process.kill(process.pid, "SIGKILL")
    yield* Effect.never
  }).pipe(Effect.orDie)

/** Fault injection (tests only): with KEEL_FAULT_INJECTION=1 and KEEL_HANDOFF_FAIL_AT=<step>, that step fails after its work. */
const failPoint = (step: string) =>
  Effect.gen(function* () {
    const enabled = yield* Config.string("KEEL_FAULT_INJECTION").pipe(Config.withDefault(""))
    const at = yield* Config.string("KEEL_HANDOFF_FAIL_AT").pipe(Config.withDefault(""))
    if (enabled === "1" && at === step) return yield* refused("fault_injected", `a test failed ${step} on purpose`)
  }).pipe(Effect.catchTag("ConfigError", Effect.die))

const holderOf = (transaction: string) => `handoff:${transaction}`
const LONG = "24 hours"

const refused = (refusal: string, detail: string) => new HandoffRefused({ code: "HANDOFF_REFUSED", refusal, detail })

/** The target's declaration and its storage, or a refusal. */
const storageOf = (target: string) =>
  Effect.gen(function* () {
    const snapshot = yield* (yield* FleetRegistry)
      .read({ allowCached: true })
      .pipe(Effect.mapError((e) => refused("registry_unavailable", e.detail)))
    const found = snapshot.registry.targets.find((t) => t.name === target)
    if (found?.storage === undefined)
      return yield* refused("storage_undeclared", `${target} declares no storage in the registry`)
    return { target: found as Target, storage: found.storage }
  })

/** The mode a runtime config file keeps: the one it replaces, else 0644 (its application may be another user). */
const configFileMode = (file: string) => {
  try {
    return fs.statSync(file).mode & 0o7777
  } catch {
    return 0o644
  }
}

/**
 * Points the runtime at `root` atomically (a staged symlink or file renamed over it); null removes it. A config
 * file is given its mode explicitly, never the process umask's (the server's is 077, docs/security.md).
 */
export const setRuntime = (runtime: { kind: "symlink" | "config_file"; path: string }, root: string | null) => {
  if (root === null) return fs.rmSync(runtime.path, { force: true })
  const staged = `${runtime.path}.keel-handoff-${process.pid}`
  fs.rmSync(staged, { force: true })
  if (runtime.kind === "symlink") fs.symlinkSync(root, staged)
  else {
    fs.writeFileSync(staged, `${root}\n`)
    fs.chmodSync(staged, configFileMode(runtime.path))
  }
  fs.renameSync(staged, runtime.path)
}

const io = <A>(refusal: string, run: () => A | Promise<A>) =>
  Effect.tryPromise({ try: async () => run(), catch: (error) => refused(refusal, (error as Error).message) })

/**
 * A phase that failed leaves its receipt saying so (state `failed`, the refusal and its detail) unless the step
 * already recorded a refusal of its own (`refused`, e.g. drain_timeout): what Status shows the operator.
 */
const recordFailure =
  (phase: "run" | "rollback") =>
  <A, R>(effect: Effect.Effect<A, HandoffRefused, R>, payload: { readonly transaction: string }) =>
    Effect.tapError(effect, (error) =>
      Effect.flatMap(AppConfig, (config) =>
        Effect.sync(() => {
          if (error.refusal === "past_data_commit_boundary") return
          const files = HandoffFiles(handoffDir(config.dataDir, payload.transaction))
          const receipt = files.receipt()
          if (receipt === null || receipt.state === "refused") return
          files.writeReceipt({ ...receipt, phase, state: "failed", refusal: error.refusal, detail: error.detail })
        })
      )
    )

export const StorageHandoffLive = StorageHandoffRun.toLayer(
  Effect.fn(function* (payload) {
    const config = yield* AppConfig
    const queue = yield* HandoffQueue
    const leases = yield* Leases
    const manager = yield* ServiceManager
    const files = HandoffFiles(handoffDir(config.dataDir, payload.transaction))
    const holder = holderOf(payload.transaction)
    const { storage, target } = yield* storageOf(payload.target)
    const steps: Array<{ step: string; at: string }> = files.receipt()?.steps.slice() ?? []

    const record = (step: string, fields: Partial<HandoffReceipt> = {}) =>
      Effect.gen(function* () {
        const at = new Date(yield* Clock.currentTimeMillis).toISOString()
        if (!steps.some((s) => s.step === step)) steps.push({ step, at })
        const before = files.receipt()
        files.writeReceipt({
          schema: "keel.handoff/v1",
          transaction: payload.transaction,
          target: payload.target,
          phase: "run",
          state: "running",
          execution_id: null,
          attempt: payload.attempt,
          winner: null,
          data_committed: false,
          captured: null,
          conflicts: [],
          retained: [],
          cancelled_jobs: [],
          refusal: null,
          detail: null,
          ...before,
          ...fields,
          steps
        })
      })
    /** A recorded step: its result is kept by the workflow engine, so a resumed run does not run it again. */
    const step = <A>(name: string, execute: Effect.Effect<A, HandoffRefused>) =>
      Effect.gen(function* () {
        const result = yield* Activity.make({
          name,
          success: Schema.Unknown,
          error: HandoffRefused,
          execute: execute.pipe(
            Effect.tap(() => failPoint(name)),
            Effect.tap(() => record(name)),
            Effect.tap(() => crashPoint(files.dir, name))
          )
        })
        return result as A
      })

    const writers = target.services.filter((s) => storage.writers.includes(s.name))

    const captured = yield* step(
      "capture",
      Effect.gen(function* () {
        const existing = files.captured()
        if (existing !== null) return existing
        const states = yield* Effect.forEach(writers, (w) =>
          Effect.map(manager.inspect({ name: w.name, unit: w.unit, program: w.program }), (state) => ({
            name: w.name,
            unit: w.unit,
            active: state.active_state === "active"
          }))
        )
        const value: Captured = {
          queue: yield* queue
            .pause(payload.target)
            .pipe(Effect.mapError((e) => refused("queue_unavailable", e.detail))),
          writers: states,
          route: yield* io("route_unreadable", () => readRoute(storage.route_file)),
          runtime: runtimeValue(storage.runtime)
        }
        files.writeCaptured(value)
        yield* record("capture", { captured: value })
        return value
      })
    )

    yield* step(
      "placement",
      Effect.forEach([storage.roots.a, storage.roots.b], (root) =>
        leases
          .acquire(placementKey(root), holder, LONG)
          .pipe(Effect.mapError((e) => refused("placement_held", e.detail)))
      )
    )

    const cancelled = yield* step(
      "drain",
      Effect.gen(function* () {
        const drained = yield* queue
          .drain(payload.target, payload.transaction, storage.drain_timeout_seconds * 1000)
          .pipe(Effect.either)
        if (drained._tag === "Left") {
          if (drained.left._tag === "HandoffQueueUnavailable")
            return yield* refused("queue_unavailable", drained.left.detail)
          // Compensate: the queue as captured, the placements released; nothing else has changed yet.
          yield* queue
            .setPause(payload.target, captured.queue)
            .pipe(Effect.mapError((e) => refused("queue_unavailable", e.detail)))
          for (const root of [storage.roots.a, storage.roots.b])
            yield* leases.release(placementKey(root), holder).pipe(Effect.ignore)
          yield* record("drain", { state: "refused", refusal: "drain_timeout", detail: drained.left.detail })
          return yield* refused("drain_timeout", drained.left.detail)
        }
        const ids = drained.right
        yield* record("drain", { cancelled_jobs: ids })
        return ids
      })
    )

    yield* step(
      "stop_writers",
      Effect.forEach(captured.writers, (w) =>
        manager
          .stop({ name: w.name, unit: w.unit })
          .pipe(Effect.mapError((e) => refused("writer_stop_failed", `${w.name}: ${e.detail}`)))
      )
    )

    yield* step(
      "fence",
      leases.acquire(STORAGE_FENCE_KEY, holder, LONG).pipe(Effect.mapError((e) => refused("fence_held", e.detail)))
    )

    const winner = yield* step(
      "preflight",
      Effect.gen(function* () {
        // The winner is fixed once for the whole transaction: a resumed attempt never reverses it.
        const recorded = files.receipt()?.winner
        if (recorded === "a" || recorded === "b") return recorded
        const route = yield* io("route_unreadable", () => readRoute(storage.route_file))
        const chosen = route === storage.roots.a ? ("a" as const) : route === storage.roots.b ? ("b" as const) : null
        if (chosen === null)
          return yield* refused("route_unknown", `${storage.route_file} names ${route}, neither root a nor b`)
        yield* record("preflight", { winner: chosen })
        return chosen
      })
    )

    yield* step(
      "checkpoint",
      io("checkpoint_failed", async () => {
        const existing = files.checkpoint()
        const a = existing?.a ?? (await manifestOf(storage.roots.a))
        const plan = existing?.plan ?? planUnion(a, await manifestOf(storage.roots.b), winner)
        if (existing === null) files.writeCheckpoint(a, plan)
        await checkpoint(storage.roots.a, plan, files.checkpointDir)
        return { conflicts: plan.conflicts, retained: plan.retained }
      }).pipe(Effect.tap((summary) => record("checkpoint", summary)))
    )

    yield* step(
      "union",
      io("union_failed", async () => {
        const saved = files.checkpoint()
        if (saved === null) throw new Error("no checkpoint")
        await applyUnion(storage.roots.a, storage.roots.b, saved.plan)
        if (!manifestsEqual(saved.plan.expected, await manifestOf(storage.roots.a)))
          throw new Error("A does not match the planned union")
      })
    )

    yield* step(
      "data_commit",
      Effect.sync(() => files.markCommitted()).pipe(Effect.zipRight(record("data_commit", { data_committed: true })))
    )

    yield* step(
      "activate",
      io("activation_failed", () => {
        setRuntime(storage.runtime, storage.roots.a)
        writeRoute(storage.route_file, storage.roots.a)
      })
    )

    yield* step(
      "restore",
      Effect.gen(function* () {
        for (const w of captured.writers.filter((w) => w.active))
          yield* manager
            .start({ name: w.name, unit: w.unit })
            .pipe(Effect.mapError((e) => refused("writer_start_failed", `${w.name}: ${e.detail}`)))
        yield* queue
          .setPause(payload.target, captured.queue)
          .pipe(Effect.mapError((e) => refused("queue_unavailable", e.detail)))
      })
    )

    yield* step(
      "release",
      Effect.forEach([STORAGE_FENCE_KEY, placementKey(storage.roots.a), placementKey(storage.roots.b)], (key) =>
        leases.release(key, holder).pipe(Effect.ignore)
      )
    )

    yield* record("receipt", {
      state: "activated_pending_lifecycle",
      cancelled_jobs: cancelled as ReadonlyArray<string>
    })
    return files.receipt()
  }, recordFailure("run"))
)

export const StorageHandoffRollbackLive = StorageHandoffRollback.toLayer(
  Effect.fn(function* (payload) {
    const config = yield* AppConfig
    const queue = yield* HandoffQueue
    const leases = yield* Leases
    const manager = yield* ServiceManager
    const files = HandoffFiles(handoffDir(config.dataDir, payload.transaction))
    const holder = holderOf(payload.transaction)
    const { storage } = yield* storageOf(payload.target)
    if (files.committed())
      return yield* refused(
        "past_data_commit_boundary",
        `${payload.transaction} passed its data-commit boundary: Resume completes it, nothing rolls it back`
      )
    const captured = files.captured()
    /** Records a rollback step in the receipt once (a step run again after a crash is not listed twice). */
    const mark = (step: string) =>
      Effect.gen(function* () {
        const before = files.receipt()
        if (before === null || before.steps.some((s) => s.step === step)) return
        const at = new Date(yield* Clock.currentTimeMillis).toISOString()
        files.writeReceipt({ ...before, phase: "rollback", steps: [...before.steps, { step, at }] })
      })
    const step = (name: string, execute: Effect.Effect<unknown, HandoffRefused>) =>
      Activity.make({
        name,
        success: Schema.Unknown,
        error: HandoffRefused,
        execute: execute.pipe(
          Effect.tap(() => mark(name)),
          Effect.tap(() => crashPoint(files.dir, name))
        )
      })

    yield* step(
      "rollback_tree",
      io("rollback_failed", async () => {
        const saved = files.checkpoint()
        if (saved !== null) await rollbackUnion(storage.roots.a, saved.plan, files.checkpointDir, saved.a)
      })
    )
    yield* step(
      "rollback_route",
      io("rollback_failed", () => {
        if (captured === null) return
        writeRoute(storage.route_file, captured.route)
        setRuntime(storage.runtime, captured.runtime)
      })
    )
    yield* step(
      "rollback_services",
      Effect.forEach(captured?.writers.filter((w) => w.active) ?? [], (w) =>
        manager
          .start({ name: w.name, unit: w.unit })
          .pipe(Effect.mapError((e) => refused("writer_start_failed", `${w.name}: ${e.detail}`)))
      )
    )
    yield* step(
      "rollback_queue",
      captured === null
        ? Effect.void
        : queue
            .setPause(payload.target, captured.queue)
            .pipe(Effect.mapError((e) => refused("queue_unavailable", e.detail)))
    )
    yield* step(
      "rollback_release",
      Effect.gen(function* () {
        for (const key of [STORAGE_FENCE_KEY, placementKey(storage.roots.a), placementKey(storage.roots.b)])
          yield* leases.release(key, holder).pipe(Effect.ignore)
        // The transaction ends here: another may start on the target.
        yield* leases.release(transactionLeaseKey(payload.target), payload.transaction).pipe(Effect.ignore)
      })
    )
    const receipt = files.receipt()
    if (receipt !== null)
      files.writeReceipt({ ...receipt, phase: "rollback", state: "rolled_back", refusal: null, detail: null })
    return files.receipt()
  }, recordFailure("rollback"))
)

/** Where a receipt lives for `transaction` (Status reads it; it changes nothing). */
export const handoffReceipt = (dataDir: string, transaction: string) =>
  HandoffFiles(handoffDir(dataDir, transaction)).receipt()

const workflowOf = (kind: HandoffKind) => (kind === "run" ? StorageHandoffRun : StorageHandoffRollback)

/** The control plane's own engine runs a local target's phases (its database is that target's SQL storage). */
export const HandoffEngineInProcess = Layer.effect(
  HandoffEngine,
  Effect.gen(function* () {
    const engine = yield* WorkflowEngine.WorkflowEngine
    return {
      start: (kind, payload) =>
        workflowOf(kind)
          .execute(payload, { discard: true })
          .pipe(Effect.asVoid, Effect.provideService(WorkflowEngine.WorkflowEngine, engine)),
      resume: (kind, _payload, executionId) =>
        workflowOf(kind).resume(executionId).pipe(Effect.provideService(WorkflowEngine.WorkflowEngine, engine)),
      // The phase runs in this process's engine, which resumes it after a restart: no worker of its own to lose.
      workerGone: () => Effect.succeed(false)
    }
  })
)

/**
 * What a target-resident worker does: the phase its receipt names (run or rollback, at its attempt), to the end,
 * on this process's engine; a killed worker's execution is picked up from its recorded steps by the next one.
 */
export const runRecordedPhase = (dataDir: string, target: string, transaction: string) =>
  Effect.gen(function* () {
    const receipt = handoffReceipt(dataDir, transaction)
    if (receipt === null || receipt.target !== target) return null
    if (receipt.phase !== "run" && receipt.phase !== "rollback") return receipt
    // A failed phase recorded its failure in the receipt: the receipt is the outcome either way.
    yield* workflowOf(receipt.phase).execute({ target, transaction, attempt: receipt.attempt }).pipe(Effect.ignore)
    return handoffReceipt(dataDir, transaction)
  })
