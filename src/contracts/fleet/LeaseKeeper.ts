import * as Entity from "@effect/cluster/Entity"
import { HttpApiSchema } from "@effect/platform"
import * as Rpc from "@effect/rpc/Rpc"
import { Schema } from "effect"
import { LeaseHolder } from "./LeaseNames.js"

/** The lease's wire shapes and the `LeaseKeeper` entity: no runtime code (the leases themselves are `Leases`, in SQL). */

/**
 * A time-bounded exclusive claim on a key. `fence` grows by one with every new holder (never on a
 * renewal), so a resource guarded by a lease can refuse writes carrying an older fence — the
 * "sequencer" of Chubby, the revision of an etcd lock.
 */
export class Lease extends Schema.Class<Lease>("Lease")({
  key: Schema.String,
  holder: Schema.String,
  fence: Schema.Int,
  acquiredAt: Schema.Int,
  renewedAt: Schema.Int,
  expiresAt: Schema.Int
}) {
  isActive(now: number) {
    return this.expiresAt > now
  }
}

export class LeaseHeld extends Schema.TaggedError<LeaseHeld>()(
  "LeaseHeld",
  { key: Schema.String, holder: Schema.String, expiresAt: Schema.Int, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class LeaseNotHeld extends Schema.TaggedError<LeaseNotHeld>()(
  "LeaseNotHeld",
  { key: Schema.String, holder: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

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
