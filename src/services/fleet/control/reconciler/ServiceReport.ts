import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import type { AlertDelivery, ServiceAlert } from "./Alerts.js"
import type { BreakerState, PauseState } from "./AutonomyControl.js"
import type { EndpointEvidence, UnitDecision } from "./Decision.js"

/** What a tick or a converge recorded per declared service (docs/reconciler.md, "Report format"). */

export const LATEST_REPORT_KEY = "state/autonomy/services/latest.json"
export const runReportKey = (runId: string) => `state/autonomy/services/runs/${runId}.json`

/** A unit row as the report keeps it: what decided, not the whole row. */
export type UnitSummary = Pick<
  UnitState,
  | "load_state"
  | "active_state"
  | "sub_state"
  | "main_pid"
  | "fragment_path"
  | "need_daemon_reload"
  | "unit_file_state"
  | "invocation_id"
  | "process"
  | "program_sha256"
  | "error"
>

export const summarize = (state: UnitState | undefined): UnitSummary | null =>
  state === undefined
    ? null
    : {
        load_state: state.load_state,
        active_state: state.active_state,
        sub_state: state.sub_state,
        main_pid: state.main_pid,
        fragment_path: state.fragment_path,
        need_daemon_reload: state.need_daemon_reload,
        unit_file_state: state.unit_file_state,
        invocation_id: state.invocation_id,
        process: state.process,
        program_sha256: state.program_sha256,
        error: state.error
      }

export interface EndpointProbeResult {
  readonly from: string
  readonly result: "observed" | "unreachable" | "unverified"
  readonly detail: string | null
}

export interface ServiceEvidence {
  readonly beacon: "missing" | "stale" | "fresh"
  readonly reported_at: string | null
  /** The unit's row in the beacon (null: the beacon has none, or there is no fresh beacon). */
  readonly row: UnitSummary | null
  /** Whether the host channel answered (asked only for a silent host's beacon unit; null otherwise). */
  readonly channel_answers: boolean | null
  /** For a fresh beacon omitting the unit: the sweep's verdict and each consumer's probe. */
  readonly endpoint: EndpointEvidence | null
  readonly endpoint_probes: ReadonlyArray<EndpointProbeResult>
  /** The unit as probed on the host (observed / not-declared cases). */
  readonly probe: UnitSummary | null
}

/**
 * What happened to the decision: nothing to do (`none`), a refusal before any host command (`refused`),
 * recorded only (`planned`, Report mode), held back by a bound (`skipped` + `skipped_because`), or executed
 * (`succeeded` + `change`, `failed` + `error`; `feeds_breaker` says whether the failure happened on the host).
 */
export interface ServiceExecution {
  readonly status: "none" | "refused" | "planned" | "skipped" | "succeeded" | "failed"
  readonly skipped_because:
    | null
    | "not_allowed_in_mode"
    | "paused"
    | "budget_exhausted"
    | "breaker_open"
    | "lease_held"
    | "registry_historical"
    | "resolved_on_host"
  readonly change: string | null
  readonly error: string | null
  readonly feeds_breaker: boolean
}

export interface ServiceRow {
  readonly target: string
  readonly name: string
  readonly unit: string
  readonly kind: string
  readonly evidence: ServiceEvidence
  readonly decision: UnitDecision
  readonly execution: ServiceExecution
  /** The seed's refusal reason, where the row is one: identity_unresolved, declaration_incomplete, endpoint_unverified. */
  readonly refusal: "identity_unresolved" | "declaration_incomplete" | "endpoint_unverified" | null
}

export interface ServiceReport {
  readonly schema: "keel.autonomy.services/v1"
  readonly run_id: string
  /** scheduled (ctl serve's tick), manual (ctl optimize run, POST /api/fleet/services/runs), converge (one service). */
  readonly trigger: "scheduled" | "manual" | "converge"
  readonly started_at: string
  readonly finished_at: string
  readonly mode: "report" | "enforce-safe" | "enforce-owned"
  readonly registry: { readonly digest: string; readonly freshness: string }
  readonly pause: PauseState
  readonly max_actions_per_tick: number
  /** Actions executed on hosts or the registry this run (succeeded or failed). */
  readonly actions_executed: number
  readonly breakers: ReadonlyArray<BreakerState>
  /** Services per decision state. */
  readonly counts: Readonly<Record<string, number>>
  readonly services: ReadonlyArray<ServiceRow>
  readonly alerts: ReadonlyArray<ServiceAlert>
  readonly alert_delivery: AlertDelivery
  /** Where the report was written (null where a write failed: `write_error` says why). */
  readonly report_keys: { readonly latest: string | null; readonly run: string | null }
  readonly write_error: string | null
}
