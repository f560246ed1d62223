import { Clock, Duration, Effect, Option, Schema } from "effect"
import { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import {
  BeaconInvalid,
  BeaconStale,
  BeaconStoreFailed,
  type StoredBeacon
} from "../../../../contracts/fleet/HostHealth.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { beaconKey, decodeBeacon } from "../../shared/beacon/Beacon.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import type { FleetRegistryDocument } from "../../shared/registry/Schema.js"
import { ActionAuthority } from "../grants/ActionAuthority.js"

/**
 * Why a beacon that names a registry target is still invalid: a clock too far ahead, another OS, a disk on an
 * undeclared mount or a mount listed twice. Undefined: valid.
 */
const beaconRefusal = (
  beacon: HostBeacon,
  target: FleetRegistryDocument["targets"][number],
  now: number,
  maxSkewMs: number
): string | undefined => {
  const ahead = Date.parse(beacon.reported_at) - now
  // A clock in the future would be stored as "fresh" and then refuse every honest beacon as older.
  if (ahead > maxSkewMs)
    return `reported_at: ${beacon.reported_at} is ${Math.round(ahead / 1000)} s ahead of the control plane's clock (at most ${Math.round(maxSkewMs / 1000)} s allowed); check the host's clock`
  if (beacon.os !== target.os) return `os: ${beacon.os} is not the registry's ${target.os} for ${beacon.host}`
  const undeclared = beacon.disks.findIndex((d) => !target.mounts.includes(d.mount))
  if (undeclared >= 0)
    return `disks.${undeclared}.mount: ${beacon.disks[undeclared]!.mount} is not a declared mount of ${beacon.host} (${target.mounts.join(", ")})`
  const twice = beacon.disks.findIndex((d, i) => beacon.disks.findIndex((e) => e.mount === d.mount) !== i)
  if (twice >= 0)
    return `disks.${twice}.mount: ${beacon.disks[twice]!.mount} is listed twice (one entry per declared mount)`
  return undefined
}

/**
 * The control plane's side of beacons: a caller authorized for `host-health-write` for the beacon's own host
 * (FleetAuth and the host check `store` is given: ActionAuthority's one rule), a document that validates and
 * names a registry target, and an atomic write that never rolls a newer beacon back.
 */
export class HostHealth extends Effect.Service<HostHealth>()("fleet/HostHealth", {
  effect: Effect.gen(function* () {
    const authority = yield* ActionAuthority
    const objects = yield* ObjectGateway
    // A beacon may be this far ahead of the control plane's clock (hosts' clocks drift); further is refused.
    const maxSkewMs = Duration.toMillis((yield* FleetConfig).beaconMaxSkew)

    /** BeaconStale when the stored beacon is newer than `beacon` (a stored one from the future does not count). */
    const refuseOlder = (key: string, beacon: HostBeacon, now: number) =>
      Effect.gen(function* () {
        const stored = yield* objects.getJson(key).pipe(Effect.orElseSucceed(() => Option.none()))
        if (Option.isNone(stored)) return
        const previous = Schema.decodeUnknownOption(HostBeacon)(stored.value)
        // A stored beacon from the future (accepted before this check) does not hold the host hostage.
        const storedAhead = Option.isSome(previous) && Date.parse(previous.value.reported_at) - now > maxSkewMs
        if (
          Option.isSome(previous) &&
          !storedAhead &&
          Date.parse(previous.value.reported_at) > Date.parse(beacon.reported_at)
        ) {
          return yield* new BeaconStale({
            code: "BEACON_STALE",
            host: beacon.host,
            stored_reported_at: previous.value.reported_at,
            detail: `a newer beacon (${previous.value.reported_at}) is already stored`
          })
        }
      })

    /**
     * Stores a beacon sent by a caller authorized for `host-health-write` (FleetAuth checked the token, the action
     * and the consumer before the body was read). The beacon names its host: `authorizeHost` is asked for it once
     * the beacon decodes, before anything else is checked against the registry.
     */
    const store = Effect.fn("HostHealth.store")(function* <E, R>(
      body: unknown,
      authorizeHost: (host: string) => Effect.Effect<void, E, R>
    ) {
      const beacon = yield* decodeBeacon(body).pipe(
        Effect.mapError((detail) => new BeaconInvalid({ code: "BEACON_INVALID", detail }))
      )
      yield* authorizeHost(beacon.host)
      // The snapshot authorization used: validating the beacon never waits on git either.
      const snapshot = yield* authority.registry.pipe(
        Effect.mapError((error) => new BeaconStoreFailed({ code: "BEACON_STORE_FAILED", detail: error.detail }))
      )
      const target = snapshot.registry.targets.find((t) => t.name === beacon.host)
      if (target === undefined) {
        return yield* new BeaconInvalid({
          code: "UNKNOWN_HOST",
          detail: `${beacon.host} is not a target of the registry`
        })
      }
      const now = yield* Clock.currentTimeMillis
      const refusal = beaconRefusal(beacon, target, now, maxSkewMs)
      if (refusal !== undefined) return yield* new BeaconInvalid({ code: "BEACON_INVALID", detail: refusal })
      const key = beaconKey(beacon.host)
      yield* refuseOlder(key, beacon, now)
      yield* objects
        .putJson(key, beacon)
        .pipe(Effect.mapError((error) => new BeaconStoreFailed({ code: "BEACON_STORE_FAILED", detail: error.detail })))
      return {
        host: beacon.host,
        key,
        reported_at: beacon.reported_at,
        stored_at: new Date(now).toISOString()
      } satisfies StoredBeacon
    })

    /**
     * Removes a host's stored beacon (an operator clearing a bad one): the next honest beacon is stored
     * whatever its date. Answers whether there was one.
     */
    const clear = Effect.fn("HostHealth.clear")(function* (host: string) {
      const key = beaconKey(host)
      const existed = yield* objects.getJson(key).pipe(
        Effect.map(Option.isSome),
        Effect.orElseSucceed(() => false)
      )
      yield* objects
        .delete(key)
        .pipe(Effect.mapError((error) => new BeaconStoreFailed({ code: "BEACON_STORE_FAILED", detail: error.detail })))
      return existed
    })

    return { store, clear } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
