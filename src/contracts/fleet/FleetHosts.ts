import { Schema } from "effect"

/** One stored document of a host: what it says, or why it cannot be shown. */
const present = Schema.Struct({ state: Schema.Literal("present"), document: Schema.Unknown })
const absent = Schema.Struct({ state: Schema.Literal("absent") })
const failed = Schema.Struct({ state: Schema.Literal("error"), error: Schema.String })
export const Publication = Schema.Union(present, absent, failed)

/** The beacon's publication also says how old its `reported_at` is (null when it has none to read). */
const ageSeconds = { age_seconds: Schema.NullOr(Schema.Int) }
export const BeaconPublication = Schema.Union(
  Schema.Struct({ ...present.fields, ...ageSeconds }),
  Schema.Struct({ ...absent.fields, ...ageSeconds }),
  Schema.Struct({ ...failed.fields, ...ageSeconds })
)

export const FleetHost = Schema.Struct({
  name: Schema.String,
  os: Schema.String,
  roles: Schema.Array(Schema.String),
  channel: Schema.Literal("local", "ssh"),
  /** `host_health/<host>.json` */
  beacon: BeaconPublication,
  /** `state/capacity/<host>.json` */
  capacity: Publication,
  /** `state/janitor/<host>.json` */
  janitor: Publication
})

/** `GET /api/fleet/hosts`: every registry target with what it last published through the object API. */
export const FleetHostsReport = Schema.Struct({
  generated_at: Schema.String,
  registry: Schema.Struct({ digest: Schema.String, freshness: Schema.String }),
  hosts: Schema.Array(FleetHost)
})
