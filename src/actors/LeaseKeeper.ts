import { Entity } from "@effect/cluster"
import { Effect } from "effect"
import { LeaseKeeper } from "../contracts/fleet/LeaseKeeper.js"
import { Leases } from "../services/platform/Leases.js"

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
