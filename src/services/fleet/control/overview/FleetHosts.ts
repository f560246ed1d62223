import { Clock, Effect, Option } from "effect"
import type * as Contract from "../../../../contracts/fleet/FleetHosts.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { beaconKey } from "../../shared/beacon/Beacon.js"
import { capacityKey, janitorReportKey } from "../../shared/beacon/HostState.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"

// The answer's shapes have one home, the contract (docs/control-plane.md, GET /api/fleet/hosts).
export type FleetHostsReport = typeof Contract.FleetHostsReport.Type
export type FleetHost = typeof Contract.FleetHost.Type
/** One stored document of a host (the contract's Publication), its document read as a `D`. */
export type Publication<D = unknown> =
  | Exclude<typeof Contract.Publication.Type, { readonly state: "present" }>
  | { readonly state: "present"; readonly document: D }

/**
 * `GET /api/fleet/hosts`: every registry target with what it last published through the object API — its
 * beacon (`host_health/<host>.json`), its capacity (`state/capacity/<host>.json`) and its janitor report
 * (`state/janitor/<host>.json`). One unreadable document does not hide the others: each says its state.
 */
export class FleetHosts extends Effect.Service<FleetHosts>()("fleet/FleetHosts", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway

    /** The document as stored, never decoded nor re-encoded (the answer relays it). */
    const publication = <D = unknown>(key: string): Effect.Effect<Publication<D>> =>
      objects.getJson(key).pipe(
        Effect.map(
          (found): Publication<D> =>
            Option.isSome(found) ? { state: "present", document: found.value as D } : { state: "absent" }
        ),
        Effect.catchAll((error) => Effect.succeed<Publication<D>>({ state: "error", error: error.detail }))
      )

    const list = Effect.fn("FleetHosts.list")(function* () {
      const now = yield* Clock.currentTimeMillis
      const snapshot = yield* registry.read({ allowCached: true, record: false })
      const hosts = yield* Effect.forEach(
        snapshot.registry.targets,
        (target) =>
          Effect.gen(function* () {
            // Only PUT /api/host-health writes it, after the beacon's rules: the stored document is a beacon.
            const beacon = yield* publication<typeof Contract.StoredBeaconDocument.Type>(beaconKey(target.name))
            const reportedAt = beacon.state === "present" ? Date.parse(String(beacon.document.reported_at)) : Number.NaN
            return {
              name: target.name,
              os: target.os,
              roles: target.roles,
              channel: target.channel === "local" ? ("local" as const) : ("ssh" as const),
              beacon: {
                ...beacon,
                age_seconds: Number.isFinite(reportedAt) ? Math.round((now - reportedAt) / 1000) : null
              },
              capacity: yield* publication(capacityKey(target.name)),
              janitor: yield* publication(janitorReportKey(target.name))
            } satisfies FleetHost
          }),
        { concurrency: 8 }
      )
      return {
        generated_at: new Date(now).toISOString(),
        registry: { digest: snapshot.digest, freshness: snapshot.freshness },
        hosts
      } satisfies FleetHostsReport
    })

    return { list } as const
  })
}) {}
