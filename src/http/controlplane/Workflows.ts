import { randomUUID } from "node:crypto"
import { HttpApiBuilder } from "@effect/platform"
import { Cause, Effect, Exit, Option } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { FleetProbe } from "../../contracts/fleet/FleetProbe.js"
import { WorkflowNotFound } from "../../contracts/fleet/Probe.js"
import { ReleaseRunWorkflow } from "../../contracts/fleet/ReleaseRun.js"
import { probeHost, startProbe } from "../../services/fleet/control/probe/HostProbe.js"
import { RunRecords } from "../../services/fleet/shared/releases/RunRecords.js"
import { grantForHost } from "./FleetAuth.js"

/** FleetProbe runs: started without waiting (the run lives in the server), polled by execution id. */
export const WorkflowsLive = HttpApiBuilder.group(ControlPlaneApi, "workflows", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* RunRecords
    const recordOf = runs.recordOf
    return handlers
      .handle("startProbe", ({ payload }) =>
        Effect.gen(function* () {
          // The probe runs a command on the host: the grant must cover it, as every route naming a host asks.
          yield* grantForHost(payload.host)
          const executionId = yield* startProbe({
            host: payload.host,
            request_id: payload.request_id ?? randomUUID(),
            pause_ms: payload.pause_ms ?? 0
          })
          return { execution_id: executionId, host: payload.host }
        })
      )
      .handle("startReleaseRun", ({ payload }) =>
        Effect.gen(function* () {
          yield* recordOf(payload.run_id)
          const executionId = yield* ReleaseRunWorkflow.execute({ run_id: payload.run_id }, { discard: true })
          return { execution_id: executionId, run_id: payload.run_id }
        })
      )
      .handle("releaseRunStatus", ({ path }) =>
        Effect.gen(function* () {
          const record = yield* recordOf(path.run_id)
          const result = yield* ReleaseRunWorkflow.poll(yield* ReleaseRunWorkflow.executionId({ run_id: path.run_id }))
          const workflow =
            result === undefined
              ? ("not_started" as const)
              : result._tag === "Suspended"
                ? ("running" as const)
                : ("done" as const)
          return { run_id: path.run_id, workflow, record }
        })
      )
      .handle("probeStatus", ({ path }) =>
        Effect.gen(function* () {
          // An execution id is the workflow engine's 32 hexadecimal digits: anything else (an id with whitespace
          // around it) names no run and is never handed to the engine, which fails on it.
          if (!/^[0-9a-f]{32}$/.test(path.execution_id))
            return yield* new WorkflowNotFound({
              code: "WORKFLOW_NOT_FOUND",
              execution_id: path.execution_id.slice(0, 80),
              detail: "no FleetProbe run: an execution id is 32 hexadecimal digits"
            })
          const result = yield* FleetProbe.poll(path.execution_id)
          if (result === undefined)
            return yield* new WorkflowNotFound({
              code: "WORKFLOW_NOT_FOUND",
              execution_id: path.execution_id,
              detail: `no FleetProbe run ${path.execution_id}`
            })
          // A run is its host's: the grant must cover the host it probes (recorded at start; for a run started
          // before hosts were recorded, the host its result names).
          const host = yield* probeHost(path.execution_id, result)
          if (Option.isSome(host)) yield* grantForHost(host.value)
          if (result._tag === "Suspended")
            return { execution_id: path.execution_id, state: "running" as const, result: null, error: null }
          return Exit.match(result.exit, {
            onSuccess: (value) => ({
              execution_id: path.execution_id,
              state: "succeeded" as const,
              result: value,
              error: null
            }),
            onFailure: (cause) => {
              const failure = Cause.failureOption(cause)
              const error = Option.isSome(failure)
                ? { code: failure.value.code, step: failure.value.step, detail: failure.value.detail }
                : { code: "PROBE_FAILED", step: "unknown", detail: Cause.pretty(cause).split("\n")[0] ?? "failed" }
              return { execution_id: path.execution_id, state: "failed" as const, result: null, error }
            }
          })
        })
      )
  })
)
