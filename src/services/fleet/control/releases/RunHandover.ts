import type * as Workflow from "@effect/workflow/Workflow"
import { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { Effect } from "effect"
import { ReleaseRunWorkflow } from "../../../../contracts/fleet/ReleaseRun.js"
import type { RunId } from "../../../../contracts/fleet/ReleaseRuns.js"
import { RunRecords } from "../../shared/releases/RunRecords.js"

/** Whether the server's workflow drives a run: never handed over, suspended between rounds, or ended. */
const workflowState = (result: Workflow.Result<unknown, unknown> | undefined) =>
  result === undefined
    ? ("not_started" as const)
    : result._tag === "Suspended"
      ? ("running" as const)
      : ("done" as const)

/**
 * A submitted release run handed to the server (`POST/GET /api/workflows/release-run`): its ReleaseRun workflow
 * drives it to published or failed on the server's engine; the same run attaches to the workflow already there.
 */
export class RunHandover extends Effect.Service<RunHandover>()("fleet/RunHandover", {
  effect: Effect.gen(function* () {
    const engine = yield* WorkflowEngine
    const runs = yield* RunRecords

    /** Starts the run's workflow (or attaches to it): only a run that is recorded (404 otherwise). */
    const start = Effect.fn("RunHandover.start")(function* (runId: RunId) {
      yield* runs.recordOf(runId)
      const executionId = yield* ReleaseRunWorkflow.execute({ run_id: runId }, { discard: true }).pipe(
        Effect.provideService(WorkflowEngine, engine)
      )
      return { execution_id: executionId, run_id: runId }
    })

    /** The run's record as stored and whether the server's workflow drives it. */
    const status = Effect.fn("RunHandover.status")(function* (runId: string) {
      const record = yield* runs.recordOf(runId)
      const result = yield* ReleaseRunWorkflow.executionId({ run_id: runId }).pipe(
        Effect.flatMap(ReleaseRunWorkflow.poll),
        Effect.provideService(WorkflowEngine, engine)
      )
      return { run_id: runId, workflow: workflowState(result), record }
    })

    return { start, status } as const
  })
}) {}
