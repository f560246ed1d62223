import { Clock, Duration, Effect, Option, Schema } from "effect"
import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import { thisHostName } from "../../../platform/AppConfig.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { beaconKey } from "../../shared/beacon/Beacon.js"
import { PROBE_BUDGET } from "../../shared/HostReads.js"
import type { FleetRegistrySnapshot } from "../../shared/registry/Registry.js"
import type { ServiceDeclaration, Target } from "../../shared/registry/Schema.js"
import { decideUnit, type EndpointEvidence, type UnitDecision } from "./Decision.js"
import { HostUnits } from "./HostUnits.js"
import { type EndpointProbeResult, type ServiceEvidence, summarize } from "./ServiceReport.js"

type Declaration = typeof ServiceDeclaration.Type

/** One declared service with its evidence and the decision on it. */
export interface Assessed {
  readonly target: Target
  readonly declaration: Declaration
  readonly evidence: ServiceEvidence
  readonly decision: UnitDecision
}

/**
 * What the reconciler decides on, gathered per declared service: the unit's row in its host's newest beacon and
 * the beacon's freshness, whether a silent host's service manager answers, and — for a fresh beacon omitting the
 * unit — the endpoint sweep from the consumer hosts and the unit probed on the host.
 */
export class FleetEvidence extends Effect.Service<FleetEvidence>()("fleet/FleetEvidence", {
  effect: Effect.gen(function* () {
    const objects = yield* ObjectGateway
    const units = yield* HostUnits
    const self = yield* thisHostName

    /** The host's newest beacon and its freshness against the host-silence threshold. */
    const beaconOf = (target: Target, silenceSeconds: number) =>
      Effect.gen(function* () {
        const found = yield* objects.getJson(beaconKey(target.name)).pipe(Effect.option, Effect.map(Option.flatten))
        if (Option.isNone(found)) return { freshness: "missing" as const, beacon: undefined }
        const decoded = Schema.decodeUnknownOption(HostBeacon)(found.value)
        if (Option.isNone(decoded)) return { freshness: "missing" as const, beacon: undefined }
        const now = yield* Clock.currentTimeMillis
        const age = (now - Date.parse(decoded.value.reported_at)) / 1000
        return { freshness: age <= silenceSeconds ? ("fresh" as const) : ("stale" as const), beacon: decoded.value }
      })

    /** The endpoint sweep for one service: probes from each declared consumer (from this host when none). */
    const sweep = (snapshot: FleetRegistrySnapshot, declaration: Declaration) =>
      Effect.gen(function* () {
        const endpoint = declaration.endpoint
        if (endpoint === undefined) return { endpoint: "not_declared" as EndpointEvidence, probes: [] }
        const consumers =
          endpoint.consumers.length === 0
            ? [{ name: self, os: "linux", channel: "local" } as unknown as Target]
            : endpoint.consumers.flatMap((name) => snapshot.registry.targets.filter((t) => t.name === name))
        const probes = yield* Effect.forEach(
          consumers,
          (from) =>
            units.probe(from, endpoint.url).pipe(
              // The probe's own budget, plus the channel's: a consumer that cannot answer in time is unverified.
              Effect.timeoutFail({
                duration: Duration.sum(PROBE_BUDGET, "15 seconds"),
                onTimeout: () => ({ detail: "the probe did not finish within its budget" })
              }),
              Effect.match({
                onSuccess: (result): EndpointProbeResult => ({ from: from.name, result, detail: null }),
                onFailure: (error): EndpointProbeResult => ({
                  from: from.name,
                  result: "unverified",
                  detail: error.detail
                })
              })
            ),
          { concurrency: 4 }
        )
        const verdict: EndpointEvidence = probes.some((p) => p.result === "observed")
          ? "observed"
          : probes.length > 0 && probes.every((p) => p.result === "unreachable")
            ? "unreachable"
            : "unverified"
        return { endpoint: verdict, probes }
      })

    /** The evidence for one declared service and the decision on it. */
    const assess = (
      snapshot: FleetRegistrySnapshot,
      target: Target,
      declaration: Declaration,
      beacon: Effect.Effect.Success<ReturnType<typeof beaconOf>>
    ) =>
      Effect.gen(function* () {
        const declared = { name: declaration.name, unit: declaration.unit, program: declaration.program }
        const row =
          beacon.freshness === "fresh" ? beacon.beacon?.units.find((u) => u.name === declaration.name) : undefined
        let channelAnswers: boolean | undefined
        let endpoint: EndpointEvidence | undefined
        let probes: ReadonlyArray<EndpointProbeResult> = []
        let probe: UnitState | undefined
        if (declaration.kind !== "recovery-managed") {
          if (beacon.freshness !== "fresh" && declaration.role === "beacon")
            // The channel answers when the host's service manager does (a row without an error).
            channelAnswers = yield* units.inspect(target, declared).pipe(
              Effect.map((state) => state.error === null),
              Effect.orElseSucceed(() => false)
            )
          if (beacon.freshness === "fresh" && row === undefined) {
            const swept = yield* sweep(snapshot, declaration)
            endpoint = swept.endpoint
            probes = swept.probes
            if (endpoint === "observed" || endpoint === "not_declared")
              probe = yield* units.inspect(target, declared).pipe(Effect.orElseSucceed(() => undefined))
          }
        }
        const decision = decideUnit({
          declaration,
          beacon: beacon.freshness,
          row,
          channelAnswers,
          endpoint,
          probe
        })
        const evidence: ServiceEvidence = {
          beacon: beacon.freshness,
          reported_at: beacon.beacon?.reported_at ?? null,
          row: summarize(row),
          channel_answers: channelAnswers ?? null,
          endpoint: endpoint ?? null,
          endpoint_probes: probes,
          probe: summarize(probe)
        }
        return { target, declaration, evidence, decision } satisfies Assessed
      })

    /** Every declared service of the registry (optionally one), assessed; hosts in parallel. */
    const assessAll = (snapshot: FleetRegistrySnapshot, only?: { target: string; name: string }) =>
      Effect.forEach(
        snapshot.registry.targets.filter((t) => only === undefined || t.name === only.target),
        (target) =>
          Effect.gen(function* () {
            const beacon = yield* beaconOf(target, snapshot.registry.settings.host_silence_seconds)
            return yield* Effect.forEach(
              target.services.filter((s) => only === undefined || s.name === only.name),
              (declaration) => assess(snapshot, target, declaration, beacon)
            )
          }),
        { concurrency: 4 }
      ).pipe(Effect.map((perTarget) => perTarget.flat()))

    return { sweep, assessAll } as const
  })
}) {}
