import { randomBytes } from "node:crypto"
import { Activity, DurableClock, Workflow } from "@effect/workflow"
import { Effect, Exit, Option, Schema } from "effect"
import { ProbeFailed, ProbeResult } from "../contracts/fleet/Probe.js"
import { channelSpec } from "../services/fleet/Channels.js"
import { FleetConfig } from "../services/fleet/FleetConfig.js"
import { FleetRegistry } from "../services/fleet/registry/Registry.js"
import { HostChannel } from "../services/platform/hostchannel/HostChannel.js"
import { ObjectGateway } from "../services/platform/objects/ObjectGateway.js"

/**
 * `FleetProbe`: the control plane's durable check that it can reach a host, in three recorded steps —
 * read the registry's declaration of the host, run `uname -sr` on it through its channel, store the report
 * at `state/probes/<execution>/report.json`. It runs in `ctl serve` on the cluster's workflow engine: each
 * step's result is kept in the database, so a server killed between steps resumes at the next one on restart
 * and no finished step runs again. Each step leaves a witness object `state/probes/<execution>/<n>-<step>.<nonce>.json`
 * (one per time the step ran), which is what makes "ran exactly once" checkable from outside.
 */
export const FleetProbe = Workflow.make({
  name: "FleetProbe",
  payload: {
    host: Schema.String,
    /** Chosen by the client: the same request id is the same execution (a retried start attaches to it). */
    request_id: Schema.String,
    /** A pause after each step (0–60000 ms): lets operators and tests watch a run step by step. */
    pause_ms: Schema.Int.pipe(Schema.between(0, 60_000))
  },
  success: ProbeResult,
  error: ProbeFailed,
  // The host is part of the key: a request id reused for another host is another run, never an attachment to a
  // run on a host the caller's grant may not cover.
  idempotencyKey: ({ host, request_id }) => `${host}/${request_id}`
})

export const probeKey = (executionId: string, name: string) => `state/probes/${executionId}/${name}`

/** Where a run's host is recorded as it starts: whoever asks about the run is authorized for that host. */
const hostRecordKey = (executionId: string) => probeKey(executionId, "host.json")

/** Starts a probe (or attaches to the run of the same host and request id), its host recorded first. */
export const startProbe = (payload: typeof FleetProbe.payloadSchema.Type) =>
  Effect.gen(function* () {
    const executionId = yield* FleetProbe.executionId(payload)
    yield* (yield* ObjectGateway).putJson(hostRecordKey(executionId), { host: payload.host }).pipe(
      // A state/ key of an execution id is always writable and valid: only the store or the fence can refuse it.
      Effect.catchTags({
        ImmutableObjectWrite: Effect.die,
        ObjectWriteUnauthorized: Effect.die,
        InvalidObjectKey: Effect.die
      })
    )
    yield* FleetProbe.execute(payload, { discard: true })
    return executionId
  })

/** The host a run probes, as recorded when it started; none for a run started before runs recorded it. */
/**
 * The host a probe run is of, for authorizing who may read it: the one recorded at its start, or, for a run started
 * before hosts were recorded, the host its successful result names (none for such a run still going or failed).
 */
export const probeHost = (
  executionId: string,
  result: Workflow.Result<typeof FleetProbe.successSchema.Type, unknown>
) =>
  Effect.gen(function* () {
    const record = yield* (yield* ObjectGateway)
      .getJson(hostRecordKey(executionId))
      // The id names a run the engine knows (asked first): its key is valid.
      .pipe(Effect.catchTag("InvalidObjectKey", Effect.die))
    const recorded = Option.flatMap(record, (value) =>
      typeof value === "object" && value !== null && typeof (value as { host?: unknown }).host === "string"
        ? Option.some((value as { host: string }).host)
        : Option.none()
    )
    return Option.orElse(recorded, () =>
      result._tag === "Complete" && Exit.isSuccess(result.exit) ? Option.some(result.exit.value.host) : Option.none()
    )
  })

export const FleetProbeLive = FleetProbe.toLayer(
  Effect.fn(function* (payload, executionId) {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway
    const channel = yield* HostChannel
    const { knownHosts } = yield* FleetConfig

    /** The step's witness: a fresh object each time the step's body runs. */
    const witness = (step: string, value: unknown) =>
      objects
        .putJson(probeKey(executionId, `${step}.${randomBytes(6).toString("hex")}.json`), {
          pid: process.pid,
          at: new Date().toISOString(),
          value
        })
        .pipe(Effect.orDie)
    const pause = (name: string) =>
      payload.pause_ms === 0 ? Effect.void : DurableClock.sleep({ name, duration: payload.pause_ms })

    const declared = yield* Activity.make({
      name: "registry",
      success: Schema.Struct({ digest: Schema.String }),
      error: ProbeFailed,
      execute: Effect.gen(function* () {
        const snapshot = yield* registry
          .read({ allowCached: true })
          .pipe(Effect.mapError((e) => new ProbeFailed({ code: "PROBE_FAILED", step: "registry", detail: e.detail })))
        if (!snapshot.registry.targets.some((t) => t.name === payload.host))
          return yield* new ProbeFailed({
            code: "PROBE_FAILED",
            step: "registry",
            detail: `${payload.host} is not a target of the registry`
          })
        yield* witness("1-registry", { digest: snapshot.digest })
        return { digest: snapshot.digest }
      })
    })
    yield* pause("after-registry")

    const reached = yield* Activity.make({
      name: "reach",
      success: Schema.Struct({ kernel: Schema.String }),
      error: ProbeFailed,
      execute: Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.orDie)
        const target = snapshot.registry.targets.find((t) => t.name === payload.host)
        if (target === undefined)
          return yield* new ProbeFailed({
            code: "PROBE_FAILED",
            step: "reach",
            detail: `${payload.host} left the registry`
          })
        const result = yield* channel
          .run(channelSpec(target, knownHosts), { argv: ["uname", "-sr"], timeoutMs: 30_000 })
          .pipe(Effect.mapError((e) => new ProbeFailed({ code: "PROBE_FAILED", step: "reach", detail: e.detail })))
        if (result.exitCode !== 0)
          return yield* new ProbeFailed({
            code: "PROBE_FAILED",
            step: "reach",
            detail: `uname exited ${result.exitCode ?? result.signal} on ${payload.host}`
          })
        const kernel = new TextDecoder().decode(result.stdout).trim()
        yield* witness("2-reach", { kernel })
        return { kernel }
      })
    })
    yield* pause("after-reach")

    const reportKey = probeKey(executionId, "report.json")
    yield* Activity.make({
      name: "report",
      execute: Effect.gen(function* () {
        yield* objects
          .putJson(reportKey, { host: payload.host, registry_digest: declared.digest, kernel: reached.kernel })
          .pipe(Effect.orDie)
        yield* witness("3-report", { key: reportKey })
      })
    })
    return { host: payload.host, registry_digest: declared.digest, kernel: reached.kernel, report_key: reportKey }
  })
)
