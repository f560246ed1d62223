import { Clock, Effect, Option } from "effect"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { beaconKey } from "../../shared/beacon/Beacon.js"
import { capacityKey, janitorReportKey } from "../../shared/beacon/HostState.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"

/** One stored document of a host: what it says, or why it cannot be shown. */
export type Publication =
  | { readonly state: "present"; readonly document: unknown }
  | { readonly state: "absent" }
  | { readonly state: "error"; readonly error: string }

export interface FleetHost {
  readonly name: string
  readonly os: string
  readonly roles: ReadonlyArray<string>
  readonly channel: "local" | "ssh"
  readonly beacon: Publication & { readonly age_seconds?: number | null }
  readonly capacity: Publication
  readonly janitor: Publication
}

export interface FleetHostsReport {
  readonly generated_at: string
  readonly registry: { readonly digest: string; readonly freshness: string }
  readonly hosts: ReadonlyArray<FleetHost>
}

/**
 * `GET /api/fleet/hosts`: every registry target with what it last published through the object API — its
 * beacon (`host_health/<host>.json`), its capacity (`state/capacity/<host>.json`) and its janitor report
 * (`state/janitor/<host>.json`). One unreadable document does not hide the others: each says its state.
 */
export class FleetHosts extends Effect.Service<FleetHosts>()("fleet/FleetHosts", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway

    const publication = (key: string): Effect.Effect<Publication> =>
      objects.getJson(key).pipe(
        Effect.map(
          (found): Publication =>
            Option.isSome(found) ? { state: "present", document: found.value } : { state: "absent" }
        ),
        Effect.catchAll((error) => Effect.succeed<Publication>({ state: "error", error: error.detail }))
      )

    const list = Effect.fn("FleetHosts.list")(function* () {
      const now = yield* Clock.currentTimeMillis
      const snapshot = yield* registry.read({ allowCached: true, record: false })
      const hosts = yield* Effect.forEach(
        snapshot.registry.targets,
        (target) =>
          Effect.gen(function* () {
            const beacon = yield* publication(beaconKey(target.name))
            const reportedAt =
              beacon.state === "present"
                ? Date.parse(String((beacon.document as { reported_at?: unknown }).reported_at))
                : Number.NaN
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
