import { Schema } from "effect"
import { UnitState } from "./Beacon.js"

/**
 * The reconciler's answers (docs/reconciler.md, "Report format"): a tick's report, the service listing and the
 * reconciler's status, as `ctl optimize run|status --json`, `ctl service list --json` and the control plane's
 * `/api/fleet/services…` routes print them. Field order is the order the services write them in.
 */

const Nullable = <S extends Schema.Schema.Any>(schema: S) => Schema.NullOr(schema)

export const PauseState = Schema.Struct({
  paused: Schema.Boolean,
  reason: Nullable(Schema.String),
  changed_by: Nullable(Schema.String),
  changed_at: Nullable(Schema.String)
})

/** closed: mutations run; open: refused until the cool-down passes; half_open: one trial mutation may run. */
export const BreakerState = Schema.Struct({
  target: Schema.String,
  phase: Schema.Literal("closed", "open", "half_open"),
  failures: Schema.Int,
  opened_at: Nullable(Schema.String),
  last_error: Nullable(Schema.String)
})

export const ServiceAlert = Schema.Struct({
  kind: Schema.Literal("identity_unresolved", "endpoint_unverified", "declaration_incomplete"),
  target: Schema.String,
  service: Schema.String,
  /** once: raised on the transition into the state; repeated: raised on every tick while it holds. */
  delivery: Schema.Literal("once", "repeated"),
  reason: Schema.String,
  run_id: Schema.String,
  raised_at: Schema.String
})

export const AlertDelivery = Schema.Struct({
  /** The alert log object the tick's alerts were written to (null when there were none). */
  log_key: Nullable(Schema.String),
  /** The webhook's outcome: not configured, nothing to send, delivered, or failed after its retries (the error). */
  webhook: Schema.Union(
    Schema.Literal("not_configured", "not_sent", "delivered"),
    Schema.Struct({ failed: Schema.String })
  )
})

export const DecisionState = Schema.Literal(
  "unknown",
  "healthy",
  "recovery_managed",
  "beacon_silent",
  "beacon_missing",
  "failed",
  "missing",
  "stale_binary",
  "relocated",
  "identity_unresolved",
  "declaration_incomplete",
  "endpoint_unverified"
)

export const DecisionAction = Schema.Literal("none", "reassert_beacon", "ensure", "kick", "adopt", "refuse")

/** What the reconciler decided for a unit, and why (`unit`: where a relocated unit now is). */
export const UnitDecision = Schema.Struct({
  state: DecisionState,
  action: DecisionAction,
  unit: Schema.optional(Schema.String),
  reason: Schema.String
})

/** A unit row as the report keeps it: what decided, not the whole row. */
export const UnitSummary = UnitState.pipe(
  Schema.pick(
    "load_state",
    "active_state",
    "sub_state",
    "main_pid",
    "fragment_path",
    "need_daemon_reload",
    "unit_file_state",
    "invocation_id",
    "process",
    "program_sha256",
    "error"
  )
)

export const EndpointEvidence = Schema.Literal("observed", "unreachable", "not_declared", "unverified")

export const ServiceEvidence = Schema.Struct({
  beacon: Schema.Literal("missing", "stale", "fresh"),
  reported_at: Nullable(Schema.String),
  /** The unit's row in the beacon (null: the beacon has none, or there is no fresh beacon). */
  row: Nullable(UnitSummary),
  /** Whether the host channel answered (asked only for a silent host's beacon unit; null otherwise). */
  channel_answers: Nullable(Schema.Boolean),
  /** For a fresh beacon omitting the unit: the sweep's verdict and each consumer's probe. */
  endpoint: Nullable(EndpointEvidence),
  endpoint_probes: Schema.Array(
    Schema.Struct({
      from: Schema.String,
      result: Schema.Literal("observed", "unreachable", "unverified"),
      detail: Nullable(Schema.String)
    })
  ),
  /** The unit as probed on the host (observed / not-declared cases). */
  probe: Nullable(UnitSummary)
})

/**
 * What happened to the decision: nothing to do (`none`), a refusal before any host command (`refused`),
 * recorded only (`planned`, Report mode), held back by a bound (`skipped` + `skipped_because`), or executed
 * (`succeeded` + `change`, `failed` + `error`; `feeds_breaker` says whether the failure happened on the host).
 */
export const ServiceExecution = Schema.Struct({
  status: Schema.Literal("none", "refused", "planned", "skipped", "succeeded", "failed"),
  skipped_because: Nullable(
    Schema.Literal(
      "not_allowed_in_mode",
      "paused",
      "budget_exhausted",
      "breaker_open",
      "lease_held",
      "registry_historical",
      "resolved_on_host"
    )
  ),
  change: Nullable(Schema.String),
  error: Nullable(Schema.String),
  feeds_breaker: Schema.Boolean
})

export const ServiceRefusal = Schema.Literal("identity_unresolved", "declaration_incomplete", "endpoint_unverified")

export const ServiceRow = Schema.Struct({
  target: Schema.String,
  name: Schema.String,
  unit: Schema.String,
  kind: Schema.String,
  evidence: ServiceEvidence,
  decision: UnitDecision,
  execution: ServiceExecution,
  /** The seed's refusal reason, where the row is one. */
  refusal: Nullable(ServiceRefusal)
})

export const AutonomyMode = Schema.Literal("report", "enforce-safe", "enforce-owned")

/** One tick's (or converge's) report: `ctl optimize run --json`, `POST /api/fleet/services/runs`. */
export const ServiceReport = Schema.Struct({
  schema: Schema.Literal("keel.autonomy.services/v1"),
  run_id: Schema.String,
  /** scheduled (ctl serve's tick), manual (ctl optimize run, POST /api/fleet/services/runs), converge (one service). */
  trigger: Schema.Literal("scheduled", "manual", "converge"),
  started_at: Schema.String,
  finished_at: Schema.String,
  mode: AutonomyMode,
  registry: Schema.Struct({ digest: Schema.String, freshness: Schema.String }),
  pause: PauseState,
  max_actions_per_tick: Schema.Int,
  /** Actions executed on hosts or the registry this run (succeeded or failed). */
  actions_executed: Schema.Int,
  breakers: Schema.Array(BreakerState),
  /** Services per decision state. */
  counts: Schema.Record({ key: Schema.String, value: Schema.Int }),
  services: Schema.Array(ServiceRow),
  alerts: Schema.Array(ServiceAlert),
  alert_delivery: AlertDelivery,
  /** Where the report was written (null where a write failed: `write_error` says why). */
  report_keys: Schema.Struct({ latest: Nullable(Schema.String), run: Nullable(Schema.String) }),
  write_error: Nullable(Schema.String)
})

/** `ctl service list --json`, `GET /api/fleet/services`: every declared service, its state in the latest tick. */
export const ServiceListing = Schema.Struct({
  run_id: Nullable(Schema.String),
  checked_at: Nullable(Schema.String),
  mode: AutonomyMode,
  services: Schema.Array(
    Schema.Struct({
      target: Schema.String,
      name: Schema.String,
      unit: Schema.String,
      kind: Schema.String,
      role: Nullable(Schema.String),
      endpoint: Nullable(Schema.String),
      /** `unchecked` when no tick has seen the service yet. */
      state: Schema.Union(DecisionState, Schema.Literal("unchecked")),
      action: Nullable(DecisionAction),
      reason: Nullable(Schema.String),
      execution: Nullable(ServiceExecution.fields.status),
      refusal: Nullable(ServiceRefusal)
    })
  )
})

/** `ctl optimize status --json`, `GET /api/fleet/services/runs/latest`: the bounds now and the latest report. */
export const ReconcilerStatus = Schema.Struct({
  mode: AutonomyMode,
  interval_seconds: Schema.Int,
  max_actions_per_tick: Schema.Int,
  pause: PauseState,
  breakers: Schema.Array(BreakerState),
  latest: Nullable(ServiceReport)
})
