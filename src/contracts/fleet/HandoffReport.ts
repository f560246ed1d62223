import { Schema } from "effect"
import { describedBy } from "../controlplane/Answers.js"
import { CancelledJobSchema, TargetPauseSchema } from "./Handoff.js"

/**
 * What a storage-root handoff records and reports (docs/handoff.md, "Receipt" and "Endpoints"): the receipt a target
 * keeps, the reports a phase answers with, and that answer. Only `effect`: the HTTP contract (StorageApi), the host
 * protocol and the workflows (StorageHandoff.ts) share it without loading a workflow definition.
 */

/**
 * running: a phase is under way (or was interrupted: Resume); failed: a step failed with the fence held (Rollback
 * before the boundary, Resume after); refused: the run refused before it changed anything lasting;
 * activated_pending_lifecycle: the run's end (Finalize next); rolled_back; complete: finalized.
 */
export const HandoffState = Schema.Literal(
  "running",
  "failed",
  "activated_pending_lifecycle",
  "rolled_back",
  "refused",
  "complete"
)
export type HandoffState = typeof HandoffState.Type

export const Captured = Schema.Struct({
  /** The target's own queue pause before the handoff (restored exactly). */
  queue: TargetPauseSchema,
  /** Each storage writer and whether it was running (only those are started again). */
  writers: Schema.Array(Schema.Struct({ name: Schema.String, unit: Schema.String, active: Schema.Boolean })),
  /** The route file's root, and the runtime's target (a symlink's target, a config file's first line; null if absent). */
  route: Schema.String,
  runtime: Schema.NullOr(Schema.String)
})
export type Captured = typeof Captured.Type

/** A conflict of the union: the path both roots hold differently, kept from A. */
const UnionConflict = Schema.Struct({ path: Schema.String, kept: Schema.Literal("a"), why: Schema.String })

/** What the checkpoint step recorded of its plan. */
export const CheckpointSummary = Schema.Struct({
  conflicts: Schema.Array(UnionConflict),
  retained: Schema.Array(Schema.String)
})

/** The transaction's receipt: `<data dir>/handoff/<transaction>/receipt.json` on the target. */
export const HandoffReceipt = Schema.Struct({
  schema: Schema.Literal("keel.handoff/v1"),
  transaction: Schema.String,
  target: Schema.String,
  phase: Schema.Literal("run", "rollback", "finalize"),
  state: HandoffState,
  /** The workflow execution of the phase under way or last run, and its attempt (a Resume is a new attempt). */
  execution_id: Schema.NullOr(Schema.String),
  attempt: Schema.Number,
  /** The root the object API served at the fenced preflight: the union's winner for the whole transaction. */
  winner: Schema.NullOr(Schema.Literal("a", "b")),
  data_committed: Schema.Boolean,
  steps: Schema.Array(Schema.Struct({ step: Schema.String, at: Schema.String })),
  captured: Schema.NullOr(Captured),
  conflicts: Schema.Array(UnionConflict),
  /** The records that became newly authoritative (B-only when A served, A-only when B served). */
  retained: Schema.Array(Schema.String),
  /** Queued jobs of the target the drain cancelled (handoff_cancelled). */
  cancelled_jobs: Schema.Array(Schema.String),
  refusal: Schema.NullOr(Schema.String),
  detail: Schema.NullOr(Schema.String)
})
export type HandoffReceipt = typeof HandoffReceipt.Type

/** Status of a `running` receipt whose worker is gone: the receipt as recorded, marked interrupted. */
export const InterruptedReport = Schema.Struct({
  ...HandoffReceipt.fields,
  state: Schema.Literal("interrupted"),
  worker: Schema.Literal("gone"),
  next_phase: Schema.Literal("resume", "rollback"),
  detail: Schema.String
})
export type InterruptedReport = typeof InterruptedReport.Type

/** A job a handoff's drain cancelled, as Finalize lists it among the retained outcomes. */
export type CancelledJob = typeof CancelledJobSchema.Type

/** What Finalize checked: each observation beside what the receipt expects. */
export const FinalizeChecks = Schema.Struct({
  tree: Schema.Struct({
    missing: Schema.Array(Schema.String),
    changed_since_activation: Schema.Array(Schema.String)
  }),
  route: Schema.Struct({ expected: Schema.String, actual: Schema.NullOr(Schema.String) }),
  runtime: Schema.Struct({ expected: Schema.String, actual: Schema.NullOr(Schema.String) }),
  writers: Schema.Array(Schema.Struct({ name: Schema.String, active: Schema.Boolean })),
  queue: Schema.Struct({ expected: Schema.NullOr(TargetPauseSchema), actual: TargetPauseSchema })
})
export type FinalizeChecks = typeof FinalizeChecks.Type

/** Finalize's receipt: the final observations against what the receipt expects, recorded either way. */
export const FinalizedReceipt = Schema.Struct({
  ...HandoffReceipt.fields,
  finalize: Schema.Struct({
    at: Schema.String,
    ok: Schema.Boolean,
    checks: FinalizeChecks,
    retained_outcomes: Schema.Struct({
      cancelled_jobs: Schema.Array(CancelledJobSchema),
      retained: Schema.Array(Schema.String)
    })
  })
})
export type FinalizedReceipt = typeof FinalizedReceipt.Type

/** A refusal before the target recorded anything of the transaction: what was refused. */
export const RefusalReport = Schema.Struct({ refusal: Schema.String, detail: Schema.String })
export type RefusalReport = typeof RefusalReport.Type

/** What a phase reports: the transaction's receipt (plain, interrupted or finalized), a bare refusal, or none. */
export const HandoffReport = Schema.Union(
  HandoffReceipt,
  InterruptedReport,
  FinalizedReceipt,
  RefusalReport,
  Schema.Null
)
export type HandoffReport = typeof HandoffReport.Type

/**
 * The answer of every phase: `exit_code` 0 (done, or accepted and under way), 1 (the phase failed: see the
 * report), 2 (refused before it changed anything: `refusal`); `report` is the transaction's receipt (or, for a
 * refusal with no receipt of its own, what was refused). The report is described (OpenAPI, the typed clients'
 * type) but never decoded nor re-encoded: a control plane relays a target's report as the target wrote it, which
 * a decoding struct would re-order and trim.
 */
export const ReconcileAnswerSchema = Schema.Struct({
  exit_code: Schema.Literal(0, 1, 2),
  refusal: Schema.NullOr(Schema.String),
  report: describedBy(HandoffReport, "The transaction's report (docs/handoff.md, Receipt), as the target wrote it")
})
export type ReconcileAnswer = typeof ReconcileAnswerSchema.Type

/** The state a report names (none for a bare refusal or no report). */
export const reportState = (report: HandoffReport): string | undefined =>
  report !== null && "state" in report ? report.state : undefined

/** The transaction a report is of (none for a bare refusal or no report). */
export const reportTransaction = (report: HandoffReport): string | undefined =>
  report !== null && "transaction" in report ? report.transaction : undefined
