import type { DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import { type CleanerReportFields, cleanerReportFields } from "./Cleaners.js"

export type Outcome =
  | "never_run"
  | "invalid_or_unavailable_policy"
  | "lock_busy"
  | "interval_noop"
  | "healthy_noop"
  | "report_only"
  | "lock_recovery_report_only"
  | "blocked_running_jobs"
  | "reclaimed_target"
  | "reclaimed_progress"
  | "cap_reached"
  | "partial_error"
  | "no_eligible_items"

/** The seed's two writers: the watch unit (its timer, or run by hand) and the queue agent on each tick. */
export type Writer = "watch" | "queue-agent"
/** What started the pass: the watch unit's timer, the agent's tick, an operator by hand, a reclaim request. */
export type Trigger = "timer" | "tick" | "manual" | "reclaim"

export type Cap = "max_items_per_pass" | "max_bytes_per_pass" | "max_scan_items" | "max_pass_seconds"

/** Where the pass's policy came from. */
export interface PolicySource {
  readonly target: string
  /** file, git or bundled registry; `default` is the built-in reporting default for a declared target. */
  readonly kind: "file" | "git" | "bundled" | "none"
  readonly location: string | null
  readonly freshness: "current" | "cached" | "bundled" | null
  readonly declared: boolean
}

/** One filesystem the pass cleans: the roots on it and its free space before and after. */
export interface FilesystemReport {
  readonly roots: ReadonlyArray<string>
  readonly free_bytes_before: number | null
  readonly free_bytes_after: number | null
  readonly reached_target: boolean
}

export interface Deletion {
  readonly path: string
  readonly bytes: number
  readonly cleaner: string
}

export interface PassError {
  readonly path: string
  readonly error: string
}

/** Who ran the pass, when, and under which policy: fixed once the policy is read. */
export interface PassHeader {
  readonly writer: Writer
  readonly trigger: Trigger
  readonly writer_version: string
  readonly reason: string | null
  readonly host: string
  readonly policy_source: PolicySource | null
  readonly dry_run: boolean
  readonly started_at: string
}

/** What the phases found and did; each phase returns a new one. */
export interface PassFindings {
  readonly caps: ReadonlyArray<Cap>
  readonly scanned: number
  readonly deleted: ReadonlyArray<Deletion>
  readonly errors: ReadonlyArray<PassError>
  readonly cleaners: Readonly<Record<string, unknown>>
  readonly filesystems: ReadonlyArray<FilesystemReport>
  /** The cleaners' own fields (their cursors as the seed names them). */
  readonly fields: CleanerReportFields
}

export type CleanupReport = PassHeader &
  Omit<PassFindings, "fields"> &
  CleanerReportFields & {
    readonly outcome: Outcome
    readonly detail: string | null
    readonly mode: DiskCleanupPolicy["mode"] | null
    readonly finished_at: string
    /** The tightest of the cleaned filesystems (least free), before and after. */
    readonly free_bytes_before: number | null
    readonly free_bytes_after: number | null
    readonly low_free_gb: number | null
    readonly target_free_gb: number | null
    readonly deleted_bytes: number
  }

export const NO_FINDINGS: PassFindings = {
  caps: [],
  scanned: 0,
  deleted: [],
  errors: [],
  cleaners: {},
  filesystems: [],
  fields: cleanerReportFields({})
}

/** `caps` with `which` added once, in the order the caps were hit. */
export const withCap = (caps: ReadonlyArray<Cap>, which: Cap): ReadonlyArray<Cap> =>
  caps.includes(which) ? caps : [...caps, which]

/** How a pass ended: its policy (when read), the free space it saw, and why (when it says). */
export interface Ending {
  readonly policy?: DiskCleanupPolicy | undefined
  readonly freeBefore?: number | null | undefined
  readonly freeAfter?: number | null | undefined
  readonly detail?: string | null | undefined
}

/** The report, its fields in the order the state file and `--json` have always printed them. */
export const assembleReport = (
  header: PassHeader,
  findings: PassFindings,
  outcome: Outcome,
  ending: Ending,
  finishedAtMs: number
): CleanupReport => ({
  ...header,
  caps: findings.caps,
  scanned: findings.scanned,
  deleted: findings.deleted,
  errors: findings.errors,
  cleaners: findings.cleaners,
  filesystems: findings.filesystems,
  ...findings.fields,
  outcome,
  detail: ending.detail ?? null,
  mode: ending.policy?.mode ?? null,
  finished_at: new Date(finishedAtMs).toISOString(),
  free_bytes_before: ending.freeBefore ?? null,
  free_bytes_after: ending.freeAfter ?? null,
  low_free_gb: ending.policy?.low_free_gb ?? null,
  target_free_gb: ending.policy?.target_free_gb ?? null,
  deleted_bytes: findings.deleted.reduce((sum, d) => sum + d.bytes, 0)
})
