import { Schema } from "effect"

/** How one read behind a gates report went (docs/gates.md): its source, its state, its time against its budget. */
export const Observation = Schema.Struct({
  operation: Schema.String,
  source: Schema.String,
  state: Schema.Literal("complete", "absent", "cached", "error", "timed_out", "skipped"),
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  elapsed_ms: Schema.NullOr(Schema.Number),
  budget_ms: Schema.Number,
  error: Schema.NullOr(Schema.String)
})
export type Observation = typeof Observation.Type

/**
 * Why a host does or does not admit work: `ctl host gates HOST --json`, `GET /api/fleet/gates/<host>`.
 * `claiming` is null while the report is incomplete (a read did not finish within its budget).
 */
export const GatesReport = Schema.Struct({
  host: Schema.String,
  complete: Schema.Boolean,
  claiming: Schema.NullOr(Schema.Struct({ admits: Schema.Boolean, reasons: Schema.Array(Schema.String) })),
  observations: Schema.Array(Observation),
  disk: Schema.Struct({
    mount: Schema.NullOr(Schema.String),
    free_bytes: Schema.NullOr(Schema.Number),
    free_gb: Schema.NullOr(Schema.Number),
    low_free_gb: Schema.NullOr(Schema.Number)
  }),
  below_watermark: Schema.NullOr(Schema.Boolean),
  pressure_source: Schema.Literal("capacity_publication", "host_disk_measurement"),
  capacity: Schema.Struct({
    diagnostics: Schema.NullOr(
      Schema.Struct({ reason: Schema.String, state: Schema.String, admitting: Schema.Boolean })
    )
  }),
  beacon: Schema.Struct({
    reported_at: Schema.NullOr(Schema.String),
    age_seconds: Schema.NullOr(Schema.Number),
    fresh: Schema.NullOr(Schema.Boolean)
  }),
  queue: Schema.NullOr(
    Schema.Struct({ paused: Schema.Boolean, counts: Schema.Record({ key: Schema.String, value: Schema.Number }) })
  )
})
export type GatesReport = typeof GatesReport.Type
