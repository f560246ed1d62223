import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Effect, Schema } from "effect"
import { Lease, LeaseHeld, LeaseHolder, LeaseNotHeld, Leases } from "../services/platform/Leases.js"

const TtlMillis = Schema.Int.pipe(Schema.between(1, 7 * 24 * 3600 * 1000))

/**
 * One actor per lease key: requests for a key are handled one at a time, wherever the key's
 * shard lives. The state is in SQL (the Leases service), so passivation or a restart loses nothing.
 */
export const LeaseKeeper = Entity.make("LeaseKeeper", [
  Rpc.make("Acquire", {
    payload: { holder: LeaseHolder, ttlMillis: TtlMillis },
    success: Lease,
    error: LeaseHeld
  }),
  Rpc.make("Renew", {
    payload: { holder: LeaseHolder, ttlMillis: TtlMillis },
    success: Lease,
    error: Schema.Union(LeaseHeld, LeaseNotHeld)
  }),
  Rpc.make("Release", {
    payload: { holder: LeaseHolder },
    success: Lease,
    error: Schema.Union(LeaseHeld, LeaseNotHeld)
  }),
  Rpc.make("Status", { success: Schema.NullOr(Lease) })
])

export const LeaseKeeperLive = LeaseKeeper.toLayer(
  Effect.gen(function* () {
    const leases = yield* Leases
    const { entityId: key } = yield* Entity.CurrentAddress
    return LeaseKeeper.of({
      Acquire: ({ payload }) => leases.acquire(key, payload.holder, payload.ttlMillis),
      Renew: ({ payload }) => leases.renew(key, payload.holder, payload.ttlMillis),
      Release: ({ payload }) => leases.release(key, payload.holder),
      Status: () => Effect.map(leases.get(key), (lease) => (lease._tag === "Some" ? lease.value : null))
    })
  }),
  { maxIdleTime: "1 minute" }
)
