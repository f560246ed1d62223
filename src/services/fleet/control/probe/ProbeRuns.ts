import { randomUUID } from "node:crypto"
import type * as Workflow from "@effect/workflow/Workflow"
import { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { Cause, Effect, Exit, Option } from "effect"
import { FleetProbe } from "../../../../contracts/fleet/FleetProbe.js"
import {
  type ProbeFailed,
  type ProbeResult,
  type ProbeStatus,
  WorkflowNotFound
} from "../../../../contracts/fleet/Probe.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { probeKey } from "./HostProbe.js"

/** Where a run's host is recorded as it starts: whoever asks about the run is authorized for that host. */
const hostRecordKey = (executionId: string) => probeKey(executionId, "host.json")

/** An execution id is the workflow engine's 32 hexadecimal digits. */
const EXECUTION_ID = /^[0-9a-f]{32}$/

type ProbeRun = Workflow.Result<typeof ProbeResult.Type, ProbeFailed>

/** A finished run as its status answers it: its result, or its error (the step it failed at and why). */
const finished = (
  executionId: string,
  exit: Exit.Exit<typeof ProbeResult.Type, ProbeFailed>
): typeof ProbeStatus.Type =>
  Exit.match(exit, {
    onSuccess: (value) => ({ execution_id: executionId, state: "succeeded" as const, result: value, error: null }),
    onFailure: (cause) => {
      const failure = Cause.failureOption(cause)
      const error = Option.isSome(failure)
        ? { code: failure.value.code, step: failure.value.step, detail: failure.value.detail }
        : { code: "PROBE_FAILED", step: "unknown", detail: Cause.pretty(cause).split("\n")[0] ?? "failed" }
      return { execution_id: executionId, state: "failed" as const, result: null, error }
    }
  })

/**
 * FleetProbe runs as clients see them (`POST/GET /api/workflows/fleet-probe`): started without waiting (the run
 * lives in the server, on its workflow engine), read back by execution id.
 */
export class ProbeRuns extends Effect.Service<ProbeRuns>()("fleet/ProbeRuns", {
  effect: Effect.gen(function* () {
    const engine = yield* WorkflowEngine
    const objects = yield* ObjectGateway

    /** Starts a probe (or attaches to the run of the same host and request id), its host recorded first. */
    const start = Effect.fn("ProbeRuns.start")(function* (request: {
      readonly host: string
      readonly request_id?: string | undefined
      readonly pause_ms?: number | undefined
    }) {
      const payload = {
        host: request.host,
        request_id: request.request_id ?? randomUUID(),
        pause_ms: request.pause_ms ?? 0
      }
      const executionId = yield* FleetProbe.executionId(payload)
      yield* objects.putJson(hostRecordKey(executionId), { host: payload.host }).pipe(
        // A state/ key of an execution id is always writable and valid: only the store or the fence can refuse it.
        Effect.catchTags({
          ImmutableObjectWrite: Effect.die,
          ObjectWriteUnauthorized: Effect.die,
          InvalidObjectKey: Effect.die
        })
      )
      yield* FleetProbe.execute(payload, { discard: true }).pipe(Effect.provideService(WorkflowEngine, engine))
      return { execution_id: executionId, host: payload.host }
    })

    /**
     * The host a probe run is of, for authorizing who may read it: the one recorded at its start, or, for a run
     * started before hosts were recorded, the host its successful result names (none for such a run still going or
     * failed).
     */
    const hostOf = (executionId: string, run: ProbeRun | undefined) =>
      Effect.gen(function* () {
        const record = yield* objects
          .getJson(hostRecordKey(executionId))
          // An execution id (checked first) makes a valid key.
          .pipe(Effect.catchTag("InvalidObjectKey", Effect.die))
        const recorded = Option.flatMap(record, (value) =>
          typeof value === "object" && value !== null && typeof (value as { host?: unknown }).host === "string"
            ? Option.some((value as { host: string }).host)
            : Option.none()
        )
        return Option.orElse(recorded, () =>
          run?._tag === "Complete" && Exit.isSuccess(run.exit) ? Option.some(run.exit.value.host) : Option.none()
        )
      })

    /**
     * A run: running, succeeded (its result) or failed (its error). A run is its host's: `authorize` is asked for
     * that host before anything of the run is answered.
     */
    const status = Effect.fn("ProbeRuns.status")(function* <E, R>(
      executionId: string,
      authorize: (host: string) => Effect.Effect<void, E, R>
    ) {
      // Anything but an engine id (an id with whitespace around it) names no run and is never handed to the
      // engine, which fails on it.
      if (!EXECUTION_ID.test(executionId))
        return yield* new WorkflowNotFound({
          code: "WORKFLOW_NOT_FOUND",
          execution_id: executionId.slice(0, 80),
          detail: "no FleetProbe run: an execution id is 32 hexadecimal digits"
        })
      const run = yield* FleetProbe.poll(executionId).pipe(Effect.provideService(WorkflowEngine, engine))
      const host = yield* hostOf(executionId, run)
      // The engine keeps a reply only once the run has suspended or ended: a run still in its first step has none,
      // and is known by the host recorded before it started (a status asked right after the start, or on a loaded
      // machine, answered 404 for it).
      if (run === undefined && Option.isNone(host))
        return yield* new WorkflowNotFound({
          code: "WORKFLOW_NOT_FOUND",
          execution_id: executionId,
          detail: `no FleetProbe run ${executionId}`
        })
      if (Option.isSome(host)) yield* authorize(host.value)
      if (run === undefined || run._tag === "Suspended")
        return { execution_id: executionId, state: "running" as const, result: null, error: null }
      return finished(executionId, run.exit)
    })

    return { start, status } as const
  })
}) {}
