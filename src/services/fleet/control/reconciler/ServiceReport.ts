import type { UnitState } from "../../../../contracts/fleet/Beacon.js"
import type * as Contract from "../../../../contracts/fleet/Services.js"

/** What a tick or a converge recorded per declared service (docs/reconciler.md, "Report format"). */

export const LATEST_REPORT_KEY = "state/autonomy/services/latest.json"
export const runReportKey = (runId: string) => `state/autonomy/services/runs/${runId}.json`

/** A unit row as the report keeps it: what decided, not the whole row. */
export type UnitSummary = typeof Contract.UnitSummary.Type

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

// The report's shapes have one home, the contract (docs/reconciler.md, "Report format"); these are its types.
export type ServiceEvidence = typeof Contract.ServiceEvidence.Type
export type EndpointProbeResult = ServiceEvidence["endpoint_probes"][number]
export type ServiceExecution = typeof Contract.ServiceExecution.Type
export type ServiceRow = typeof Contract.ServiceRow.Type
export type ServiceReport = typeof Contract.ServiceReport.Type
