import { Activity, WorkflowEngine } from "@effect/workflow"
import { Effect, Layer, Schema } from "effect"
import { Captured, CheckpointSummary } from "../contracts/fleet/HandoffReport.js"
import { HandoffRefused, StorageHandoffRollback, StorageHandoffRun } from "../contracts/fleet/StorageHandoff.js"
import { HandoffEngine, type HandoffKind } from "../services/fleet/agent/handoff/HandoffEngine.js"
import { HandoffFiles, handoffDir } from "../services/fleet/agent/handoff/HandoffFiles.js"
import { HandoffSteps } from "../services/fleet/agent/handoff/HandoffSteps.js"

/**
 * The handoff's workflows (contracts: `StorageHandoffRun`, `StorageHandoffRollback`): the order of their steps,
 * each one recorded activity whose result the engine keeps, so a resumed phase does not run a finished step
 * again. The steps themselves are `HandoffSteps`.
 */

/** One recorded step: its work, then the receipt (and, in tests, an injected fault or crash). */
const activity = <S extends Schema.Schema.Any>(
  recorded: <A>(name: string, execute: Effect.Effect<A, HandoffRefused>) => Effect.Effect<A, HandoffRefused>,
  name: string,
  success: S,
  execute: Effect.Effect<S["Type"], HandoffRefused>
) => Activity.make({ name, success, error: HandoffRefused, execute: recorded(name, execute) })

/** A failed phase's receipt says so (Status shows it). */
const recordFailure =
  (phase: "run" | "rollback") =>
  <A, R>(effect: Effect.Effect<A, HandoffRefused, R>, payload: { readonly transaction: string }) =>
    Effect.tapError(effect, (error) =>
      Effect.flatMap(HandoffSteps, (steps) => steps.recordFailure(phase, payload.transaction, error))
    )

/** Run: capture → placement leases → drain → stop writers → fence → preflight → checkpoint → union → data commit → activate → restore → release. */
export const StorageHandoffLive = StorageHandoffRun.toLayer(
  Effect.fn(function* (payload) {
    const run = yield* (yield* HandoffSteps).run(payload)
    const step = <S extends Schema.Schema.Any>(
      name: string,
      success: S,
      execute: Effect.Effect<S["Type"], HandoffRefused>
    ) => activity(run.recorded, name, success, execute)

    const captured = yield* step("capture", Captured, run.capture)
    yield* step("placement", Schema.Void, run.placement)
    const cancelled = yield* step("drain", Schema.Array(Schema.String), run.drain(captured))
    yield* step("stop_writers", Schema.Void, run.stopWriters(captured))
    yield* step("fence", Schema.Void, run.fence)
    const winner = yield* step("preflight", Schema.Literal("a", "b"), run.preflight)
    yield* step("checkpoint", CheckpointSummary, run.checkpoint(winner))
    yield* step("union", Schema.Void, run.union)
    yield* step("data_commit", Schema.Void, run.dataCommit)
    yield* step("activate", Schema.Void, run.activate)
    yield* step("restore", Schema.Void, run.restore(captured))
    yield* step("release", Schema.Void, run.release)
    return yield* run.finish(cancelled)
  }, recordFailure("run"))
)

/** Rollback (before the data-commit boundary only): A back to its checkpoint, then route, runtime, services, queue. */
export const StorageHandoffRollbackLive = StorageHandoffRollback.toLayer(
  Effect.fn(function* (payload) {
    const rollback = yield* (yield* HandoffSteps).rollback(payload)
    const step = (name: string, execute: Effect.Effect<void, HandoffRefused>) =>
      activity(rollback.recorded, name, Schema.Void, execute)

    yield* step("rollback_tree", rollback.tree)
    yield* step("rollback_route", rollback.route)
    yield* step("rollback_services", rollback.services)
    yield* step("rollback_queue", rollback.queue)
    yield* step("rollback_release", rollback.release)
    return yield* rollback.finish
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
