import { Clock, Effect } from "effect"
import type { ReconcilePhase } from "../../../../contracts/fleet/Handoff.js"
import type { HandoffReceipt, ReconcileAnswer } from "../../../../contracts/fleet/HandoffReport.js"
import { StorageHandoffRollback, StorageHandoffRun } from "../../../../contracts/fleet/StorageHandoff.js"
import { AppConfig } from "../../../platform/AppConfig.js"
import { Leases } from "../../../platform/Leases.js"
import { readRoute } from "../../../platform/objects/RoutedFsObjectStore.js"
import { HandoffQueue } from "../../shared/handoff/HandoffQueue.js"
import {
  declaredTarget,
  reconcileFailed as failed,
  OPEN_TRANSACTION_TTL,
  refusedPhase as refuse,
  transactionLeaseKey
} from "../../shared/handoff/HandoffTarget.js"
import type { TargetPause } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { StorageDeclaration } from "../../shared/registry/Schema.js"
import { ServiceManager } from "../../shared/units/ServiceManager.js"
import { HandoffEngine } from "./HandoffEngine.js"
import { HandoffFiles, handoffDir, newReceipt } from "./HandoffFiles.js"
import { runtimeValue } from "./RuntimePointer.js"
import { diffManifests, manifestOf } from "./TreeManifest.js"

type Files = ReturnType<typeof HandoffFiles>
type Storage = typeof StorageDeclaration.Type

/** What Finalize observed on the target (`observe` below). */
interface Observed {
  readonly tree: {
    readonly missing: ReadonlyArray<string>
    readonly unexpected: ReadonlyArray<string>
    readonly changed: ReadonlyArray<string>
  }
  readonly route: string | null
  readonly runtime: string | null
  readonly writers: ReadonlyArray<{ readonly name: string; readonly active: boolean }>
  readonly pause: TargetPause
}

/** Finalize's verdict on its observations: each check as reported, whether all passed, and what failed, in words. */
const judge = (storage: Storage, receipt: HandoffReceipt, observed: Observed) => {
  const { pause, route, runtime, tree, writers } = observed
  const queueAsCaptured = JSON.stringify(pause) === JSON.stringify(receipt.captured?.queue ?? null)
  const checks = {
    // Entries written after activation (writers run again) are reported, not failed: missing ones fail.
    tree: { missing: tree.missing, changed_since_activation: [...tree.changed, ...tree.unexpected] },
    route: { expected: storage.roots.a, actual: route },
    runtime: { expected: storage.roots.a, actual: runtime },
    writers,
    queue: { expected: receipt.captured?.queue ?? null, actual: pause }
  }
  const ok =
    tree.missing.length === 0 &&
    route === storage.roots.a &&
    runtime === storage.roots.a &&
    writers.every((w) => w.active) &&
    queueAsCaptured
  const failedChecks = [
    ...(tree.missing.length > 0 ? [`${tree.missing.length} planned entries missing from A`] : []),
    ...(route !== storage.roots.a ? ["the route is not on A"] : []),
    ...(runtime !== storage.roots.a ? ["the runtime is not on A"] : []),
    ...writers.filter((w) => !w.active).map((w) => `writer ${w.name} is not running`),
    ...(queueAsCaptured ? [] : ["the queue pause is not as captured"])
  ]
  return { checks, ok, failedChecks }
}

/**
 * The storage-root handoff's phases on this host, for one of its targets and a transaction (seed 002, "Storage-root
 * handoff"; docs/handoff.md): Run and Resume start (or attach to) the recorded Run workflow, Rollback the Rollback
 * workflow, Finalize validates the final observations and records `complete`; Status changes nothing. Accepted is
 * not completion: a phase started here goes on in the workflow engine and Status shows how far it got. The host's
 * side of the protocol's storage-root operation (`ctl host storage-root-reconcile --here`, and the control plane's
 * own host through HandoffAgent).
 */
export class HandoffHere extends Effect.Service<HandoffHere>()("fleet/HandoffHere", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const registry = yield* FleetRegistry
    const leases = yield* Leases
    const queue = yield* HandoffQueue
    const engine = yield* HandoffEngine
    const manager = yield* ServiceManager

    const storageOf = (target: string) =>
      declaredTarget(registry, target).pipe(Effect.mapError((e) => failed(e.detail)))

    const answer = (receipt: HandoffReceipt | null, exit: 0 | 1 = 0): ReconcileAnswer => ({
      exit_code: receipt?.state === "failed" ? 1 : receipt?.state === "refused" ? 2 : exit,
      refusal: receipt?.state === "refused" || receipt?.state === "failed" ? receipt.refusal : null,
      report: receipt
    })

    /**
     * Status of a `running` receipt whose worker is gone (killed, or the host restarted): nothing runs it any more, so
     * it is not reported running. The receipt itself is unchanged (Status changes nothing); the phase that starts the
     * next worker — Resume for a run, Rollback for a rollback — goes on from its recorded steps.
     */
    const interrupted = (receipt: HandoffReceipt): ReconcileAnswer => {
      const next = receipt.phase === "rollback" ? "rollback" : "resume"
      return {
        exit_code: 1,
        refusal: "worker_gone",
        report: {
          ...receipt,
          state: "interrupted",
          worker: "gone",
          next_phase: next,
          detail: `the worker running ${receipt.transaction}'s ${receipt.phase} is gone before the phase ended: --phase ${next} starts the next one, which goes on from the recorded steps`
        }
      }
    }

    /** Run or Resume: starts (or attaches to) the recorded Run workflow, holding the target's transaction lease. */
    const startRun = (
      target: string,
      transaction: string,
      phase: "run" | "resume",
      files: Files,
      receipt: HandoffReceipt | null
    ) =>
      Effect.gen(function* () {
        if (phase === "resume" && receipt === null)
          return refuse("unknown_transaction", `${transaction} has no recorded run to resume`)
        if (receipt?.state === "rolled_back" || receipt?.state === "complete")
          return refuse(`transaction_${receipt.state}`, `${transaction} is ${receipt.state}`, receipt)
        // One transaction per target: the open one holds the target's transaction lease.
        const lock = yield* leases
          .acquire(transactionLeaseKey(target), transaction, OPEN_TRANSACTION_TTL)
          .pipe(Effect.either)
        if (lock._tag === "Left")
          return refuse(
            "transaction_in_progress",
            lock.left._tag === "LeaseHeld" ? `transaction ${lock.left.holder} is open on ${target}` : lock.left.detail
          )
        if (receipt?.state === "running") {
          // Under way, or interrupted (a killed process): the engine resumes it from its recorded steps.
          if (phase === "resume" && receipt.execution_id !== null)
            yield* engine.resume("run", { target, transaction, attempt: receipt.attempt }, receipt.execution_id)
          return answer(receipt)
        }
        if (receipt?.state === "activated_pending_lifecycle") return answer(receipt) // the run ended: Finalize is next
        const ended = receipt?.state === "failed" || receipt?.state === "refused"
        const attempt = receipt === null ? 1 : receipt.attempt + (ended ? 1 : 0)
        // The execution id is known before the execution starts (it derives from the idempotency key): the
        // receipt names it before the workflow can write anything, so no write of ours races the workflow's.
        const executionId = yield* StorageHandoffRun.executionId({ target, transaction, attempt })
        files.writeReceipt({
          ...newReceipt({ transaction, target, attempt, execution_id: executionId }),
          ...receipt,
          ...(receipt === null
            ? {}
            : { state: "running" as const, execution_id: executionId, attempt, refusal: null, detail: null })
        })
        yield* engine.start("run", { target, transaction, attempt })
        return answer(files.receipt())
      })

    /** Rollback: starts (or attaches to) the Rollback workflow; refused past the data-commit boundary. */
    const startRollback = (target: string, transaction: string, files: Files, receipt: HandoffReceipt | null) =>
      Effect.gen(function* () {
        if (receipt === null) return refuse("unknown_transaction", `${transaction} has no recorded run to roll back`)
        if (files.committed() || receipt.data_committed)
          return refuse(
            "past_data_commit_boundary",
            `${transaction} passed its data-commit boundary: Resume completes it`,
            receipt
          )
        if (receipt.state === "rolled_back") return answer(receipt)
        if (receipt.state === "running" && receipt.phase === "rollback") {
          // Under way, or interrupted (a killed process): it goes on from its recorded steps.
          if (receipt.execution_id !== null)
            yield* engine.resume("rollback", { target, transaction, attempt: receipt.attempt }, receipt.execution_id)
          return answer(receipt)
        }
        if (receipt.state === "running" && receipt.phase === "run")
          return refuse("phase_in_progress", `${transaction}'s run is under way: roll back once it stops`, receipt)
        const attempt = receipt.phase === "rollback" ? receipt.attempt + 1 : 1
        const executionId = yield* StorageHandoffRollback.executionId({ target, transaction, attempt })
        files.writeReceipt({
          ...receipt,
          phase: "rollback",
          state: "running",
          execution_id: executionId,
          attempt,
          refusal: null,
          detail: null
        })
        yield* engine.start("rollback", { target, transaction, attempt })
        return answer(files.receipt())
      })

    /** What Finalize observes on the target now: A's tree against the plan, route, runtime, writers, queue. */
    const observe = (target: string, transaction: string, storage: Storage, files: Files, receipt: HandoffReceipt) =>
      Effect.gen(function* () {
        const saved = files.checkpoint()
        const tree =
          saved === null
            ? { missing: ["(no checkpoint)"], unexpected: [], changed: [] }
            : diffManifests(saved.plan.expected, yield* Effect.promise(() => manifestOf(storage.roots.a)))
        const route = yield* Effect.try(() => readRoute(storage.route_file)).pipe(Effect.orElseSucceed(() => null))
        const runtime = runtimeValue(storage.runtime)
        const writers = yield* Effect.forEach(receipt.captured?.writers.filter((w) => w.active) ?? [], (w) =>
          Effect.map(manager.inspect({ name: w.name, unit: w.unit }), (state) => ({
            name: w.name,
            active: state.active_state === "active"
          }))
        )
        const pause = yield* queue.pause(target).pipe(Effect.mapError((e) => failed(`the queue: ${e.detail}`)))
        const cancelled = yield* queue
          .cancelledBy(target, transaction)
          .pipe(Effect.mapError((e) => failed(`the queue: ${e.detail}`)))
        return { tree, route, runtime, writers, pause, cancelled }
      })

    /** Finalize: the final observations against what the receipt expects, recorded either way. */
    const finalize = (
      target: string,
      transaction: string,
      storage: Storage,
      files: Files,
      receipt: HandoffReceipt | null
    ) =>
      Effect.gen(function* () {
        if (receipt === null) return refuse("unknown_transaction", `${transaction} has no recorded run to finalize`)
        if (receipt.state === "complete") return answer(receipt)
        if (receipt.state !== "activated_pending_lifecycle")
          return refuse("not_activated", `${transaction} is ${receipt.state}, not activated_pending_lifecycle`, receipt)
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const observed = yield* observe(target, transaction, storage, files, receipt)
        const { checks, failedChecks, ok } = judge(storage, receipt, observed)
        // Recorded either way: the receipt says the last phase started and why it failed (Finalize may run again).
        const report = {
          ...receipt,
          phase: "finalize" as const,
          state: ok ? ("complete" as const) : receipt.state,
          refusal: ok ? null : "finalize_checks_failed",
          detail: ok ? null : failedChecks.join("; "),
          finalize: {
            at: now,
            ok,
            checks,
            retained_outcomes: { cancelled_jobs: observed.cancelled, retained: receipt.retained }
          }
        }
        files.writeReceipt(report)
        if (!ok) return { exit_code: 1 as const, refusal: "finalize_checks_failed", report: files.receipt() }
        yield* leases.release(transactionLeaseKey(target), transaction).pipe(Effect.ignore)
        return answer(files.receipt())
      })

    /** A phase on this host: the target's own files, service manager and engine (docs/handoff.md). */
    const onThisHost = (target: string, transaction: string, phase: ReconcilePhase) =>
      Effect.gen(function* () {
        const files = HandoffFiles(handoffDir(config.dataDir, transaction))
        const receipt = files.receipt()
        if (receipt !== null && receipt.target !== target)
          return refuse("transaction_of_another_target", `${transaction} belongs to ${receipt.target}`)
        if (phase === "status") {
          if (receipt === null) return yield* failed(`no report of transaction ${transaction} on ${target}`)
          if (receipt.state === "running" && (yield* engine.workerGone(transaction))) return interrupted(receipt)
          return answer(receipt)
        }
        const declared = yield* storageOf(target)
        if (declared === undefined) return refuse("unknown_target", `${target} is not a target of the registry`)
        if (declared.storage === undefined)
          return refuse("storage_undeclared", `${target} declares no storage in the registry`)
        if (phase === "run" || phase === "resume") return yield* startRun(target, transaction, phase, files, receipt)
        if (phase === "rollback") return yield* startRollback(target, transaction, files, receipt)
        return yield* finalize(target, transaction, declared.storage, files, receipt)
      })

    return { onThisHost } as const
  })
}) {}
