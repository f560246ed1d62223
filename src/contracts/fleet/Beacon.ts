import { Schema } from "effect"

// The host-health beacon and a unit's state as a host reads it: what `ctl host beacon write` prints, what the
// control plane stores and serves, and what a host's `ctl service … --here --json` answers. Runtime-free (only
// `effect`): the control plane, the host agent and the typed clients share it.

const Bytes = Schema.Int.pipe(Schema.nonNegative())
const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

export const DiskState = Schema.Struct({
  mount: Schema.String,
  /** Exact integers from statfs (blocks × block size); null when the mount could not be read, never 0. */
  total_bytes: Schema.NullOr(Bytes),
  free_bytes: Schema.NullOr(Bytes),
  available_bytes: Schema.NullOr(Bytes),
  error: Schema.NullOr(Schema.String)
})

export const LiveProcess = Schema.Struct({
  pid: Schema.Int.pipe(Schema.positive()),
  /** The running executable's path (Linux: /proc/<pid>/exe), null when unreadable. */
  executable: Schema.NullOr(Schema.String),
  sha256: Schema.NullOr(Sha256)
})

export const UnitState = Schema.Struct({
  name: Schema.String,
  unit: Schema.String,
  manager: Schema.Literal("systemd", "launchd", "supervisor"),
  load_state: Schema.NullOr(Schema.String),
  active_state: Schema.NullOr(Schema.String),
  sub_state: Schema.NullOr(Schema.String),
  main_pid: Schema.NullOr(Schema.Int.pipe(Schema.nonNegative())),
  exec_start: Schema.NullOr(Schema.String),
  fragment_path: Schema.NullOr(Schema.String),
  process: Schema.NullOr(LiveProcess),
  /** systemd's NeedDaemonReload: the unit file changed on disk since it was loaded (null: unknown). */
  need_daemon_reload: Schema.optionalWith(Schema.NullOr(Schema.Boolean), { default: () => null }),
  /** systemd's UnitFileState (enabled, disabled, static, …); null where the manager has none. */
  unit_file_state: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** systemd's InvocationID of the running instance: it changes with every start. */
  invocation_id: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** SHA-256 of the declared `program` on disk, beside the live executable's: decides a stale binary. */
  program_sha256: Schema.optionalWith(Schema.NullOr(Sha256), { default: () => null }),
  /** Why the unit could not be read, when it could not. */
  error: Schema.NullOr(Schema.String)
})
export type UnitState = typeof UnitState.Type

/**
 * An instant in UTC as `YYYY-MM-DDTHH:MM:SS(.mmm)Z` that names a real moment: `T99:00:00`, `2026-02-30` or a
 * leap second match the pattern but no date, and an unreadable time would skip every comparison made with it
 * (the beacon's rollback guard, its clock-skew check).
 */
const UTC_TIMESTAMP = "must be an ISO 8601 UTC timestamp of a real instant"
export const UtcTimestamp = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$/, { message: () => UTC_TIMESTAMP }),
  Schema.filter(
    (text) => {
      const millis = Date.parse(text)
      return !Number.isNaN(millis) && new Date(millis).toISOString().slice(0, 19) === text.slice(0, 19)
    },
    { message: () => UTC_TIMESTAMP }
  )
)

/** The host-health beacon (docs/beacon.md), validated by the writer and by the control plane. */
export const HostBeacon = Schema.Struct({
  schema: Schema.Literal("keel.beacon/v1"),
  host: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,62}$/)),
  os: Schema.Literal("linux", "darwin"),
  reported_at: UtcTimestamp,
  writer_version: Schema.String,
  disks: Schema.Array(DiskState),
  units: Schema.Array(UnitState)
})
export type HostBeacon = typeof HostBeacon.Type
