import * as fs from "node:fs/promises"
import * as os from "node:os"
import { Data, Effect } from "effect"
import { thisHostName } from "../../../platform/AppConfig.js"
import { type CapacityPublication, capacityKey, janitorReportKey } from "../../shared/beacon/HostState.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { configuredObjectApiClient } from "../../shared/objects/ObjectApiClient.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { Janitor } from "../janitor/Janitor.js"

export class HostStatePublishFailed extends Data.TaggedError("HostStatePublishFailed")<{
  readonly code: string
  readonly detail: string
}> {}

const GIB = 1024 ** 3

/** Load at or above this many times the CPU count makes the host stop admitting work. */
export const SATURATED_LOAD_PER_CPU = 2

/**
 * The host's own view of whether it admits work, from what it can measure itself: the free space of its
 * first declared mount against its janitor policy's `low_free_gb` (when it declares one), and its 1-minute
 * load average against its CPU count. `state`: `ready` (admitting), `disk_low` or `saturated` (not).
 */
export const measureCapacity = (
  host: string,
  mount: string,
  lowFreeGb: number | undefined,
  now: Date
): Effect.Effect<CapacityPublication, HostStatePublishFailed> =>
  Effect.gen(function* () {
    const stats = yield* Effect.tryPromise({
      try: () => fs.statfs(mount),
      catch: (error) =>
        new HostStatePublishFailed({ code: "MEASURE_FAILED", detail: `statfs ${mount}: ${(error as Error).message}` })
    })
    const freeGb = (stats.bavail * stats.bsize) / GIB
    const cpus = os.availableParallelism()
    const load = os.loadavg()[0] ?? 0
    const free = `${freeGb.toFixed(1)} GiB free on ${mount}`
    const loadText = `load ${load.toFixed(2)} on ${cpus} cpus`
    const published_at = now.toISOString()
    if (lowFreeGb !== undefined && freeGb < lowFreeGb)
      return {
        host,
        published_at,
        admitting: false,
        state: "disk_low",
        reason: `${free}, below low_free_gb ${lowFreeGb}`
      }
    if (load >= SATURATED_LOAD_PER_CPU * cpus)
      return {
        host,
        published_at,
        admitting: false,
        state: "saturated",
        reason: `${loadText} (≥ ${SATURATED_LOAD_PER_CPU} per cpu)`
      }
    return { host, published_at, admitting: true, state: "ready", reason: `${free}, ${loadText}` }
  })

/**
 * `ctl host publish-state`, run on a host (by its agent's timer, beside the beacon): measures the host's
 * capacity and takes its janitor's last recorded pass, and PUTs both through the control plane's object
 * API — `state/capacity/<host>.json` and `state/janitor/<host>.json` — with a token exchanged for the grant
 * in KEEL_STATE_GRANT_FILE (host-state-write for this host). The host never writes the control plane's
 * store directly.
 */
export class HostStatePublisher extends Effect.Service<HostStatePublisher>()("fleet/HostStatePublisher", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const janitor = yield* Janitor
    const fleet = yield* FleetConfig

    const publish = Effect.fn("HostStatePublisher.publish")(function* () {
      const host = yield* thisHostName.pipe(Effect.orDie)
      const snapshot = yield* registry
        .read({ allowCached: true, record: false })
        .pipe(Effect.mapError((e) => new HostStatePublishFailed({ code: "REGISTRY_UNAVAILABLE", detail: e.detail })))
      const target = snapshot.registry.targets.find((t) => t.name === host)
      if (target === undefined)
        return yield* new HostStatePublishFailed({
          code: "UNKNOWN_HOST",
          detail: `${host} (KEEL_HOST) is not a target of the registry`
        })
      const capacity = yield* measureCapacity(
        host,
        target.mounts[0] ?? "/",
        target.disk_cleanup?.low_free_gb,
        new Date()
      )
      const last = yield* janitor.lastReport
      const janitorReport = { host, cleanup_state: { outcome: last?.outcome ?? "never_run", report: last } }

      const asFailure = (error: { readonly code: string; readonly detail: string }) =>
        new HostStatePublishFailed({ code: error.code, detail: error.detail })
      const client = yield* configuredObjectApiClient(["KEEL_STATE_GRANT_FILE"]).pipe(
        Effect.mapError(asFailure),
        Effect.provideService(FleetConfig, fleet)
      )
      const encode = (value: unknown) => new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`)
      const capacityHead = yield* client.put(capacityKey(host), encode(capacity)).pipe(Effect.mapError(asFailure))
      const janitorHead = yield* client
        .put(janitorReportKey(host), encode(janitorReport))
        .pipe(Effect.mapError(asFailure))
      return {
        host,
        capacity: { key: capacityHead.key, sha256: capacityHead.sha256, document: capacity },
        janitor: { key: janitorHead.key, sha256: janitorHead.sha256, outcome: janitorReport.cleanup_state.outcome }
      }
    })

    return { publish } as const
  })
}) {}
