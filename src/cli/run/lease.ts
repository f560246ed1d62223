import { Effect, Option } from "effect"
import type { Lease } from "../../contracts/fleet/LeaseKeeper.js"
import { Leases } from "../../services/platform/Leases.js"
import type { Parsed } from "../Lazy.js"
import type { acquireConfig, listConfig, releaseConfig, renewConfig, statusConfig } from "../lease.js"
import { emit, failWith, iso, table } from "../Output.js"

const describe = (lease: Lease) =>
  `${lease.key} held by ${lease.holder} (fence ${lease.fence}) until ${iso(lease.expiresAt)}`

const toJson = (lease: Lease) => ({
  key: lease.key,
  holder: lease.holder,
  fence: lease.fence,
  acquired_at: iso(lease.acquiredAt),
  renewed_at: iso(lease.renewedAt),
  expires_at: iso(lease.expiresAt)
})

export const acquire = ({ holder, json, key, ttl }: Parsed<typeof acquireConfig>) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.acquire(key, holder, ttl)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => describe(lease))),
    Effect.catchTags({ LeaseHeld: failWith(json) })
  )

export const renew = ({ holder, json, key, ttl }: Parsed<typeof renewConfig>) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.renew(key, holder, ttl)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => describe(lease))),
    Effect.catchTags({ LeaseHeld: failWith(json), LeaseNotHeld: failWith(json) })
  )

export const release = ({ holder, json, key }: Parsed<typeof releaseConfig>) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.release(key, holder)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => `released ${lease.key} (fence ${lease.fence})`)),
    Effect.catchTags({ LeaseHeld: failWith(json), LeaseNotHeld: failWith(json) })
  )

export const list = ({ all, json }: Parsed<typeof listConfig>) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.list({ includeExpired: all })),
    Effect.flatMap((leases) =>
      emit(json, leases.map(toJson), (rows) =>
        rows.length === 0
          ? "no leases"
          : table(
              ["KEY", "HOLDER", "FENCE", "EXPIRES"],
              rows.map((l) => [l.key, l.holder, String(l.fence), l.expires_at])
            )
      )
    )
  )

export const status = ({ json, key }: Parsed<typeof statusConfig>) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.get(key)),
    Effect.flatMap((lease) =>
      emit(json, Option.match(lease, { onNone: () => null, onSome: toJson }), () =>
        Option.match(lease, { onNone: () => `${key} is free`, onSome: describe })
      )
    )
  )
