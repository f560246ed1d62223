import { Schema } from "effect"

/** A part of the overview that could not be read says so (never shown as zero). */
export const Unavailable = Schema.Struct({ state: Schema.Literal("unavailable"), error: Schema.String })

const available = <F extends Schema.Struct.Fields>(fields: F) =>
  Schema.Union(Schema.Struct({ state: Schema.Literal("available"), ...fields }), Unavailable)

const Claiming = Schema.NullOr(Schema.Struct({ admits: Schema.Boolean, reasons: Schema.Array(Schema.String) }))

/** One host: its beacon's freshness and free disk, and a claiming verdict from the stored evidence. */
export const OverviewHost = Schema.Union(
  Schema.Struct({
    host: Schema.String,
    os: Schema.String,
    beacon: Schema.Struct({
      state: Schema.Literal("available"),
      reported_at: Schema.NullOr(Schema.String),
      age_seconds: Schema.NullOr(Schema.Number),
      fresh: Schema.NullOr(Schema.Boolean)
    }),
    claiming: Claiming,
    free_bytes: Schema.NullOr(Schema.Number),
    free_gb: Schema.NullOr(Schema.Number)
  }),
  Schema.Struct({ host: Schema.String, os: Schema.String, beacon: Unavailable })
)

/** `ctl overview --json`, `GET /api/fleet/overview`: the fleet, the queue, slot quotas and this month's billing. */
export const OverviewReport = Schema.Struct({
  generated_at: Schema.String,
  fleet: available({
    registry: Schema.String,
    /** Why the registry is the last valid copy rather than a current read (null when current). */
    registry_cached_because: Schema.NullOr(Schema.String),
    host_silence_seconds: Schema.Number,
    hosts: Schema.Array(OverviewHost)
  }),
  queue: available({
    paused: Schema.Boolean,
    counts: Schema.Record({ key: Schema.String, value: Schema.Number }),
    oldest_queued_age_seconds: Schema.NullOr(Schema.Number)
  }),
  quota: available({
    targets: Schema.Array(
      Schema.Struct({ host: Schema.String, slots: Schema.NullOr(Schema.Number), running: Schema.Number })
    )
  }),
  billing: available({
    month: Schema.String,
    targets: Schema.Array(
      Schema.Struct({
        host: Schema.String,
        job_hours: Schema.Number,
        hourly_rate: Schema.NullOr(Schema.Number),
        cost: Schema.NullOr(Schema.Number)
      })
    ),
    total: Schema.Number
  })
})
