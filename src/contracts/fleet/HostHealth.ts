import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export class BeaconInvalid extends Schema.TaggedError<BeaconInvalid>()(
  "BeaconInvalid",
  { code: Schema.Literal("BEACON_INVALID", "UNKNOWN_HOST"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

export class BeaconStale extends Schema.TaggedError<BeaconStale>()(
  "BeaconStale",
  {
    code: Schema.Literal("BEACON_STALE"),
    host: Schema.String,
    stored_reported_at: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

export class BeaconStoreFailed extends Schema.TaggedError<BeaconStoreFailed>()(
  "BeaconStoreFailed",
  { code: Schema.Literal("BEACON_STORE_FAILED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** A stored beacon, as `PUT /api/host-health` answers it. */
export const StoredBeaconAnswer = Schema.Struct({
  host: Schema.String,
  key: Schema.String,
  reported_at: Schema.String,
  stored_at: Schema.String
})
export type StoredBeacon = typeof StoredBeaconAnswer.Type
