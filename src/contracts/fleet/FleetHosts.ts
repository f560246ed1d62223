import { Schema } from "effect"
import { HostBeacon } from "./Beacon.js"

/** One stored document of a host: what it says, or why it cannot be shown. */
const presentOf = <D extends Schema.Schema.Any>(document: D) =>
  Schema.Struct({ state: Schema.Literal("present"), document })
const absent = Schema.Struct({ state: Schema.Literal("absent") })
const failed = Schema.Struct({ state: Schema.Literal("error"), error: Schema.String })
/**
 * The capacity publication and the janitor report are relayed as stored, whatever they say: the object API stores
 * them as a host sent them (host-state-write), without a schema, so nothing holds them to one (gates and the
 * overview decode the capacity on read and say when it does not).
 */
export const Publication = Schema.Union(presentOf(Schema.Unknown), absent, failed)

/**
 * A stored beacon as it was written: only `PUT /api/host-health` writes `host_health/<host>.json` (the object API
 * refuses it), after the beacon's rules. The encoded side, because a beacon stored before a unit's four later
 * fields (`need_daemon_reload`, `unit_file_state`, `invocation_id`, `program_sha256`) has none of them.
 */
export const StoredBeaconDocument = Schema.encodedBoundSchema(HostBeacon)

/** The beacon's publication also says how old its `reported_at` is (null when it has none to read). */
const ageSeconds = { age_seconds: Schema.NullOr(Schema.Int) }
export const BeaconPublication = Schema.Union(
  Schema.Struct({ ...presentOf(StoredBeaconDocument).fields, ...ageSeconds }),
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
