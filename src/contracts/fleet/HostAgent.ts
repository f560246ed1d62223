import { Schema } from "effect"
import { HostBeacon, UnitState } from "./Beacon.js"
import type { ReconcilePhase } from "./Handoff.js"
import { ReconcileAnswerSchema } from "./HandoffReport.js"

// What the control plane asks a host, declared once (docs/fleet-protocol.md). Each operation is carried by the
// host's own `ctl` — the `--here --json` command line below, run through the target's host channel (ssh, or a
// local process) — and answers one JSON document on stdout, decoded here with the operation's answer schema.
// The schemas are what the printing code of each `--here` command emits today, key for key: a decoded answer
// printed again is the same text (test/fleet/host-agent.test.ts checks every operation against the real command
// line). Runtime-free: only `effect`.

/** A failing `ctl … --json` that printed nothing else: main's one document, `{"error": {"code", "detail"}}`. */
export const CtlFailure = Schema.Struct({
  error: Schema.Struct({ code: Schema.String, detail: Schema.String })
})
export type CtlFailure = typeof CtlFailure.Type

/** One operation: the `ctl` arguments that carry it, how long the host may take, and what it answers. */
export interface HostCommand<Payload, A, I = A> {
  /** The operation's name (logs, docs). */
  readonly operation: string
  /** `ctl`'s arguments on the host (argv: never a shell string). */
  readonly argv: (payload: Payload) => ReadonlyArray<string>
  readonly timeoutMs: (payload: Payload) => number
  /** The answer on stdout, success or refusal; the exit code travels beside it. */
  readonly answer: Schema.Schema<A, I>
}

const command = <Payload, A, I>(spec: HostCommand<Payload, A, I>) => spec

// Answers are decoded with the schema's own key order (the default): each schema lists its keys in the order the
// host prints them.

// ——— Errors the protocol itself names ———

/** The host could not be asked (its channel failed, or its answer was unreadable): nothing ran there. */
export class HostUnreachable extends Schema.TaggedError<HostUnreachable>()("HostUnreachable", {
  target: Schema.String,
  detail: Schema.String
}) {}

/** A command that changes the host failed there, or its postcondition did not hold: feeds the breaker. */
export class UnitCommandFailed extends Schema.TaggedError<UnitCommandFailed>()("UnitCommandFailed", {
  unit: Schema.String,
  command: Schema.String,
  detail: Schema.String
}) {}

/** The rendered definition did not pass the manager's own check; nothing on the host changed. */
export class UnitPreflightRejected extends Schema.TaggedError<UnitPreflightRejected>()("UnitPreflightRejected", {
  unit: Schema.String,
  detail: Schema.String
}) {}

// ——— Units: `ctl service show|ensure|kick|reassert NAME --target T --here --json` ———

export const UnitVerb = Schema.Literal("show", "ensure", "kick", "reassert")
export type UnitVerb = typeof UnitVerb.Type

export const UnitChange = Schema.Literal("created", "reloaded", "restarted", "kicked", "reasserted")

/** `show`: the unit as the host's service manager reads it. */
export const UnitShown = Schema.Struct({ ok: Schema.Literal(true), state: UnitState })

/** `ensure`, `kick`, `reassert`: what the host did and the unit read back. */
export const UnitChanged = Schema.Struct({
  ok: Schema.Literal(true),
  change: UnitChange,
  unit: Schema.String,
  state: UnitState
})

/**
 * A `--here` refusal (exit 1), as `ctl service` prints any failure of the verb: the error's stable code, its tag
 * (UnitCommandFailed and UnitPreflightRejected keep theirs across the wire; UnknownService, ServiceOperationRefused,
 * DeclarationIncomplete and the registry's refusals say why nothing ran), the command that failed, and why.
 */
export const HereRefusal = Schema.Struct({
  ok: Schema.Literal(false),
  error: Schema.Struct({
    code: Schema.String,
    _tag: Schema.String,
    command: Schema.optional(Schema.String),
    detail: Schema.String
  })
})
export type HereRefusal = typeof HereRefusal.Type

export interface UnitPayload {
  readonly verb: UnitVerb
  readonly service: string
  readonly target: string
}

export const UnitOperation = command({
  operation: "unit",
  argv: ({ service, target, verb }: UnitPayload) => ["service", verb, service, "--target", target, "--here", "--json"],
  timeoutMs: () => 120_000,
  answer: Schema.Union(UnitChanged, UnitShown, HereRefusal, CtlFailure)
})

// ——— Probe: `ctl service verify --here --url URL --json` (from the consumer host) ———

export const EndpointProbe = Schema.Literal("observed", "unreachable")
export type EndpointProbe = typeof EndpointProbe.Type

export const EndpointProbed = Schema.Struct({ ok: Schema.Literal(true), probe: EndpointProbe })

export const ProbeOperation = command({
  operation: "probe",
  argv: ({ url }: { readonly url: string }) => ["service", "verify", "--here", "--url", url, "--json"],
  timeoutMs: () => 120_000,
  answer: Schema.Union(EndpointProbed, CtlFailure)
})

// ——— Beacon: `ctl host beacon write --host T` (the beacon document, always JSON) ———

export const BeaconOperation = command({
  operation: "beacon",
  argv: ({ target }: { readonly target: string }) => ["host", "beacon", "write", "--host", target],
  timeoutMs: () => 30_000,
  answer: HostBeacon
})

// ——— Janitor: `ctl space report|reclaim T … --here --json` ———

export const JanitorOutcome = Schema.Literal(
  "never_run",
  "invalid_or_unavailable_policy",
  "lock_busy",
  "interval_noop",
  "healthy_noop",
  "report_only",
  "lock_recovery_report_only",
  "blocked_running_jobs",
  "reclaimed_target",
  "reclaimed_progress",
  "cap_reached",
  "partial_error",
  "no_eligible_items"
)

export const PolicySource = Schema.Struct({
  target: Schema.String,
  kind: Schema.Literal("file", "git", "bundled", "none"),
  location: Schema.NullOr(Schema.String),
  freshness: Schema.NullOr(Schema.Literal("current", "cached", "bundled")),
  declared: Schema.Boolean
})

export const FilesystemReport = Schema.Struct({
  roots: Schema.Array(Schema.String),
  free_bytes_before: Schema.NullOr(Schema.Number),
  free_bytes_after: Schema.NullOr(Schema.Number),
  reached_target: Schema.Boolean
})

/**
 * One janitor pass as recorded (docs/janitor.md): the seed's `cleanup_state.report`. Keys in the order the pass
 * writes them (what it starts with, then what its conclusion adds): an answer relayed prints the same text.
 */
export const CleanupReport = Schema.Struct({
  writer: Schema.Literal("watch", "queue-agent"),
  trigger: Schema.Literal("timer", "tick", "manual", "reclaim"),
  writer_version: Schema.String,
  reason: Schema.NullOr(Schema.String),
  host: Schema.String,
  policy_source: Schema.NullOr(PolicySource),
  dry_run: Schema.Boolean,
  started_at: Schema.String,
  caps: Schema.Array(Schema.Literal("max_items_per_pass", "max_bytes_per_pass", "max_scan_items", "max_pass_seconds")),
  scanned: Schema.Number,
  deleted: Schema.Array(Schema.Struct({ path: Schema.String, bytes: Schema.Number, cleaner: Schema.String })),
  errors: Schema.Array(Schema.Struct({ path: Schema.String, error: Schema.String })),
  /** Each cleaner's own part (its status, roots, candidates, skipped counts): shaped by the cleaner. */
  cleaners: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  filesystems: Schema.Array(FilesystemReport),
  build_caches_resume_from: Schema.NullOr(Schema.Array(Schema.String)),
  backup_twins_cursor: Schema.NullOr(Schema.String),
  outcome: JanitorOutcome,
  detail: Schema.NullOr(Schema.String),
  mode: Schema.NullOr(Schema.Literal("off", "report", "enforce")),
  finished_at: Schema.String,
  free_bytes_before: Schema.NullOr(Schema.Number),
  free_bytes_after: Schema.NullOr(Schema.Number),
  low_free_gb: Schema.NullOr(Schema.Number),
  target_free_gb: Schema.NullOr(Schema.Number),
  deleted_bytes: Schema.Number
})
export type CleanupReportDocument = typeof CleanupReport.Type

/**
 * A pass recorded by an older `ctl` (a field added since is missing): relayed as the host keeps it, key for key —
 * a host's last report must not become unreadable because the control plane's `ctl` is newer.
 */
export const RecordedReport = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** `space report T --here --json`: the last recorded pass (null before the first). */
export const JanitorState = Schema.Struct({
  cleanup_state: Schema.Struct({
    outcome: Schema.Union(JanitorOutcome, Schema.String),
    report: Schema.NullOr(Schema.Union(CleanupReport, RecordedReport))
  })
})

export const JanitorReportOperation = command({
  operation: "janitor report",
  argv: ({ target }: { readonly target: string }) => ["space", "report", target, "--here", "--json"],
  timeoutMs: () => 10 * 60_000,
  answer: Schema.Union(JanitorState, CtlFailure)
})

export interface JanitorPassPayload {
  readonly target: string
  /** A preview (`--dry-run`), or a deleting pass with its reason (`--apply --reason`). */
  readonly apply: { readonly reason: string } | null
}

/** `space reclaim T --dry-run|--apply --reason R --here --json`: a pass toward the target (exit 1 when it failed). */
export const JanitorPassOperation = command({
  operation: "janitor pass",
  argv: ({ apply, target }: JanitorPassPayload) => [
    "space",
    "reclaim",
    target,
    ...(apply === null ? ["--dry-run"] : ["--apply", "--reason", apply.reason]),
    "--here",
    "--json"
  ],
  timeoutMs: () => 10 * 60_000,
  answer: Schema.Union(CleanupReport, CtlFailure)
})

// ——— Storage-root handoff: `ctl host storage-root-reconcile T --transaction ID --phase P --here --json` ———
// Its answer is the control plane's own (contracts/fleet/Handoff.ts): `{exit_code, refusal, report}`, the command
// exiting with `exit_code`, the report (the receipt) kept whole as the host wrote it.

export interface StoragePhasePayload {
  readonly target: string
  readonly transaction: string
  readonly phase: ReconcilePhase
}

export const StoragePhaseOperation = command({
  operation: "storage-root phase",
  argv: ({ phase, target, transaction }: StoragePhasePayload) => [
    "host",
    "storage-root-reconcile",
    target,
    "--transaction",
    transaction,
    "--phase",
    phase,
    "--here",
    "--json"
  ],
  // Finalize reads A's whole tree on the target; Run and Rollback answer once started.
  timeoutMs: ({ phase }: StoragePhasePayload) => (phase === "finalize" ? 1_800_000 : 120_000),
  answer: Schema.Union(ReconcileAnswerSchema, CtlFailure)
})

// ——— Runner units: `ctl host precheck-runner unit ensure|remove|show T --here --json` (as root) ———

export const RunnerUnitVerb = Schema.Literal("ensure", "remove", "show")
export type RunnerUnitVerb = typeof RunnerUnitVerb.Type

export const RunnerUnitsDone = Schema.Struct({
  ok: Schema.Literal(true),
  units: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      change: Schema.Union(UnitChange, Schema.Literal("shown", "absent", "removed")),
      state: UnitState
    })
  )
})

export const RunnerUnitsRefused = Schema.Struct({
  ok: Schema.Literal(false),
  error: Schema.Struct({ _tag: Schema.String, detail: Schema.String })
})

export const RunnerUnitAnswer = Schema.Union(RunnerUnitsDone, RunnerUnitsRefused, CtlFailure)
export type RunnerUnitAnswer = typeof RunnerUnitAnswer.Type

export const RunnerUnitOperation = command({
  operation: "runner unit",
  argv: ({ target, verb }: { readonly verb: RunnerUnitVerb; readonly target: string }) => [
    "host",
    "precheck-runner",
    "unit",
    verb,
    target,
    "--here",
    "--json"
  ],
  timeoutMs: () => 120_000,
  answer: RunnerUnitAnswer
})
