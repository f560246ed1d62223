import { Clock, Effect } from "effect"
import type { Captured, HandoffReceipt } from "../../../../contracts/fleet/HandoffReport.js"
import { HandoffRefused } from "../../../../contracts/fleet/StorageHandoff.js"
import { AppConfig } from "../../../platform/AppConfig.js"
import { FaultInjector } from "../../../platform/FaultInjector.js"
import { Leases } from "../../../platform/Leases.js"
import { readRoute, writeRoute } from "../../../platform/objects/RoutedFsObjectStore.js"
import { STORAGE_FENCE_KEY } from "../../../platform/objects/StorageFence.js"
import { HandoffQueue } from "../../shared/handoff/HandoffQueue.js"
import { declaredTarget, transactionLeaseKey } from "../../shared/handoff/HandoffTarget.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { StorageDeclaration } from "../../shared/registry/Schema.js"
import { ServiceManager } from "../../shared/units/ServiceManager.js"
import { HandoffFiles, handoffDir, newReceipt } from "./HandoffFiles.js"
import { runtimeValue, setRuntime } from "./RuntimePointer.js"
import { manifestOf, manifestsEqual } from "./TreeManifest.js"
import { applyUnion, checkpoint, planUnion, rollbackUnion } from "./TreeUnion.js"

export const placementKey = (root: string) => `placement:${root}`

const holderOf = (transaction: string) => `handoff:${transaction}`
const LONG = "24 hours"

export const refused = (refusal: string, detail: string) =>
  new HandoffRefused({ code: "HANDOFF_REFUSED", refusal, detail })

const io = <A>(refusal: string, run: () => A | Promise<A>) =>
  Effect.tryPromise({ try: async () => run(), catch: (error) => refused(refusal, (error as Error).message) })

interface Payload {
  readonly target: string
  readonly transaction: string
  readonly attempt: number
}

type Storage = typeof StorageDeclaration.Type

/**
 * The storage-root handoff's steps (docs/handoff.md), each an effect the workflows in `actors/StorageHandoff.ts`
 * run as one recorded activity: the target's files, leases, queue and units, and the receipt that shows an
 * operator how far the transaction got. Each step is safe to run again (the engine re-runs a step whose record a
 * crash lost): it reads what an earlier run of it left before it changes anything.
 */
export class HandoffSteps extends Effect.Service<HandoffSteps>()("fleet/HandoffSteps", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const queue = yield* HandoffQueue
    const leases = yield* Leases
    const manager = yield* ServiceManager
    const registry = yield* FleetRegistry
    const faults = yield* FaultInjector

    /** The target's declaration and its storage, or a refusal. */
    const storageOf = (target: string) =>
      Effect.gen(function* () {
        const found = yield* declaredTarget(registry, target).pipe(
          Effect.mapError((e) => refused("registry_unavailable", e.detail))
        )
        if (found?.storage === undefined)
          return yield* refused("storage_undeclared", `${target} declares no storage in the registry`)
        return { target: found, storage: found.storage }
      })

    const queueRefused = (e: { readonly detail: string }) => refused("queue_unavailable", e.detail)
    const setPause = (target: string, pause: Captured["queue"]) =>
      queue.setPause(target, pause).pipe(Effect.mapError(queueRefused))
    const startWriters = (writers: Captured["writers"]) =>
      Effect.forEach(
        writers.filter((w) => w.active),
        (w) =>
          manager
            .start({ name: w.name, unit: w.unit })
            .pipe(Effect.mapError((e) => refused("writer_start_failed", `${w.name}: ${e.detail}`)))
      )
    const releaseLeases = (storage: Storage, holder: string) =>
      Effect.forEach([STORAGE_FENCE_KEY, placementKey(storage.roots.a), placementKey(storage.roots.b)], (key) =>
        leases.release(key, holder).pipe(Effect.ignore)
      )

    /** The Run's steps for one transaction, from its receipt as the (re)started workflow finds it. */
    const run = (payload: Payload) =>
      Effect.gen(function* () {
        const files = HandoffFiles(handoffDir(config.dataDir, payload.transaction))
        const holder = holderOf(payload.transaction)
        const { storage, target } = yield* storageOf(payload.target)
        const steps: Array<{ step: string; at: string }> = files.receipt()?.steps.slice() ?? []

        /** The receipt with `step` listed once and `fields` recorded (the operator's view; the engine's record is the truth). */
        const record = (step: string, fields: Partial<HandoffReceipt> = {}) =>
          Effect.gen(function* () {
            const at = new Date(yield* Clock.currentTimeMillis).toISOString()
            if (!steps.some((s) => s.step === step)) steps.push({ step, at })
            // The default record without its steps: they come last, as the receipt has always listed them.
            const { steps: _none, ...defaults } = newReceipt({ ...payload, execution_id: null })
            files.writeReceipt({ ...defaults, ...files.receipt(), ...fields, steps })
          })

        /** What follows a step's work: the injected fault (tests), the receipt, the injected crash (tests). */
        const recorded = <A>(name: string, execute: Effect.Effect<A, HandoffRefused>) =>
          execute.pipe(
            Effect.tap(() =>
              faults.failsAt(name) ? refused("fault_injected", `a test failed ${name} on purpose`) : Effect.void
            ),
            Effect.tap(() => record(name)),
            Effect.tap(() => faults.crashAfter(files.dir, name))
          )

        const writers = target.services.filter((s) => storage.writers.includes(s.name))

        const capture = Effect.gen(function* () {
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
            queue: yield* queue.pause(payload.target).pipe(Effect.mapError(queueRefused)),
            writers: states,
            route: yield* io("route_unreadable", () => readRoute(storage.route_file)),
            runtime: runtimeValue(storage.runtime)
          }
          files.writeCaptured(value)
          yield* record("capture", { captured: value })
          return value
        })

        const placement = Effect.forEach([storage.roots.a, storage.roots.b], (root) =>
          leases
            .acquire(placementKey(root), holder, LONG)
            .pipe(Effect.mapError((e) => refused("placement_held", e.detail)))
        ).pipe(Effect.asVoid)

        const drain = (captured: Captured) =>
          Effect.gen(function* () {
            const drained = yield* queue
              .drain(payload.target, payload.transaction, storage.drain_timeout_seconds * 1000)
              .pipe(Effect.either)
            if (drained._tag === "Right") {
              yield* record("drain", { cancelled_jobs: drained.right })
              return drained.right
            }
            if (drained.left._tag === "HandoffQueueUnavailable") return yield* queueRefused(drained.left)
            // Compensate: the queue as captured, the placements released; nothing else has changed yet.
            yield* setPause(payload.target, captured.queue)
            for (const root of [storage.roots.a, storage.roots.b])
              yield* leases.release(placementKey(root), holder).pipe(Effect.ignore)
            yield* record("drain", { state: "refused", refusal: "drain_timeout", detail: drained.left.detail })
            return yield* refused("drain_timeout", drained.left.detail)
          })

        const stopWriters = (captured: Captured) =>
          Effect.forEach(captured.writers, (w) =>
            manager
              .stop({ name: w.name, unit: w.unit })
              .pipe(Effect.mapError((e) => refused("writer_stop_failed", `${w.name}: ${e.detail}`)))
          ).pipe(Effect.asVoid)

        const fence = leases.acquire(STORAGE_FENCE_KEY, holder, LONG).pipe(
          Effect.mapError((e) => refused("fence_held", e.detail)),
          Effect.asVoid
        )

        const preflight = Effect.gen(function* () {
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

        const checkpointA = (winner: "a" | "b") =>
          io("checkpoint_failed", async () => {
            const existing = files.checkpoint()
            const a = existing?.a ?? (await manifestOf(storage.roots.a))
            const plan = existing?.plan ?? planUnion(a, await manifestOf(storage.roots.b), winner)
            if (existing === null) files.writeCheckpoint(a, plan)
            await checkpoint(storage.roots.a, plan, files.checkpointDir)
            return { conflicts: plan.conflicts, retained: plan.retained }
          }).pipe(Effect.tap((summary) => record("checkpoint", summary)))

        const union = io("union_failed", async () => {
          const saved = files.checkpoint()
          if (saved === null) throw new Error("no checkpoint")
          await applyUnion(storage.roots.a, storage.roots.b, saved.plan)
          if (!manifestsEqual(saved.plan.expected, await manifestOf(storage.roots.a)))
            throw new Error("A does not match the planned union")
        })

        const dataCommit = Effect.sync(() => files.markCommitted()).pipe(
          Effect.zipRight(record("data_commit", { data_committed: true }))
        )

        const activate = io("activation_failed", () => {
          setRuntime(storage.runtime, storage.roots.a)
          writeRoute(storage.route_file, storage.roots.a)
        })

        const restore = (captured: Captured) =>
          Effect.zipRight(startWriters(captured.writers), setPause(payload.target, captured.queue))

        const release = releaseLeases(storage, holder).pipe(Effect.asVoid)

        /** The run's end: the receipt says activated, Finalize is next. */
        const finish = (cancelled: ReadonlyArray<string>) =>
          Effect.map(record("receipt", { state: "activated_pending_lifecycle", cancelled_jobs: cancelled }), () =>
            files.receipt()
          )

        return {
          recorded,
          capture,
          placement,
          drain,
          stopWriters,
          fence,
          preflight,
          checkpoint: checkpointA,
          union,
          dataCommit,
          activate,
          restore,
          release,
          finish
        } as const
      })

    /** The Rollback's steps for one transaction (refused past the data-commit boundary: Resume completes it). */
    const rollback = (payload: Payload) =>
      Effect.gen(function* () {
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

        const recorded = <A>(name: string, execute: Effect.Effect<A, HandoffRefused>) =>
          execute.pipe(
            Effect.tap(() => mark(name)),
            Effect.tap(() => faults.crashAfter(files.dir, name))
          )

        const tree = io("rollback_failed", async () => {
          const saved = files.checkpoint()
          if (saved !== null) await rollbackUnion(storage.roots.a, saved.plan, files.checkpointDir, saved.a)
        })

        const route = io("rollback_failed", () => {
          if (captured === null) return
          writeRoute(storage.route_file, captured.route)
          setRuntime(storage.runtime, captured.runtime)
        })

        const services = startWriters(captured?.writers ?? []).pipe(Effect.asVoid)

        const queuePause = captured === null ? Effect.void : setPause(payload.target, captured.queue)

        const release = Effect.gen(function* () {
          yield* releaseLeases(storage, holder)
          // The transaction ends here: another may start on the target.
          yield* leases.release(transactionLeaseKey(payload.target), payload.transaction).pipe(Effect.ignore)
        })

        /** The rollback's end: the receipt says rolled back. */
        const finish = Effect.sync(() => {
          const receipt = files.receipt()
          if (receipt !== null)
            files.writeReceipt({ ...receipt, phase: "rollback", state: "rolled_back", refusal: null, detail: null })
          return files.receipt()
        })

        return { recorded, tree, route, services, queue: queuePause, release, finish } as const
      })

    /**
     * A phase that failed leaves its receipt saying so (state `failed`, the refusal and its detail) unless the step
     * already recorded a refusal of its own (`refused`, e.g. drain_timeout): what Status shows the operator.
     */
    const recordFailure = (phase: "run" | "rollback", transaction: string, error: HandoffRefused) =>
      Effect.sync(() => {
        if (error.refusal === "past_data_commit_boundary") return
        const files = HandoffFiles(handoffDir(config.dataDir, transaction))
        const receipt = files.receipt()
        if (receipt === null || receipt.state === "refused") return
        files.writeReceipt({ ...receipt, phase, state: "failed", refusal: error.refusal, detail: error.detail })
      })

    return { run, rollback, recordFailure } as const
  })
}) {}
