import * as Workflow from "@effect/workflow/Workflow"
import { Schema } from "effect"
import { type CancelledJobSchema, TargetPauseSchema } from "./Handoff.js"

/**
 * The storage-root handoff's contract (docs/handoff.md): the two durable workflows, their payload and answer, the
 * receipt a target keeps, and the answer of a reconcile phase. No runtime code: the workflows' bodies are in
 * `src/actors/StorageHandoff.ts`, their steps in `src/services/fleet/agent/handoff/`. Only `effect` and the workflow
 * definition module (not the engine) are imported.
 */

/** A phase refused, with the seed's refusal reason (docs/handoff.md); state was restored where it had changed. */
export class HandoffRefused extends Schema.TaggedError<HandoffRefused>()("HandoffRefused", {
  code: Schema.Literal("HANDOFF_REFUSED"),
  refusal: Schema.String,
  detail: Schema.String
}) {}

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

/** `attempt` starts at 1; a Resume (or a Rollback after a failed one) runs the phase again as the next attempt. */
const Payload = { target: Schema.String, transaction: Schema.String, attempt: Schema.Int }

/** A phase's answer: the transaction's receipt as the phase left it (the receipt file is the operator's record). */
const PhaseReceipt = Schema.NullOr(HandoffReceipt)

/** Run: capture → placement leases → drain → stop writers → fence → preflight → checkpoint → union → data commit → activate → restore → release. */
export const StorageHandoffRun = Workflow.make({
  name: "StorageHandoffRun",
  payload: Payload,
  success: PhaseReceipt,
  error: HandoffRefused,
  idempotencyKey: ({ attempt, transaction }) => `run:${transaction}:${attempt}`
})

/** Rollback (before the data-commit boundary only): A back to its checkpoint, then route, runtime, services, queue. */
export const StorageHandoffRollback = Workflow.make({
  name: "StorageHandoffRollback",
  payload: Payload,
  success: PhaseReceipt,
  error: HandoffRefused,
  idempotencyKey: ({ attempt, transaction }) => `rollback:${transaction}:${attempt}`
})

/** Status of a `running` receipt whose worker is gone: the receipt as recorded, marked interrupted. */
export interface InterruptedReport extends Omit<HandoffReceipt, "state" | "detail"> {
  readonly state: "interrupted"
  readonly worker: "gone"
  readonly next_phase: "resume" | "rollback"
  readonly detail: string
}

/** A job a handoff's drain cancelled, as Finalize lists it among the retained outcomes. */
export type CancelledJob = typeof CancelledJobSchema.Type

/** What Finalize checked: each observation beside what the receipt expects. */
export interface FinalizeChecks {
  readonly tree: { readonly missing: ReadonlyArray<string>; readonly changed_since_activation: ReadonlyArray<string> }
  readonly route: { readonly expected: string; readonly actual: string | null }
  readonly runtime: { readonly expected: string; readonly actual: string | null }
  readonly writers: ReadonlyArray<{ readonly name: string; readonly active: boolean }>
  readonly queue: { readonly expected: Captured["queue"] | null; readonly actual: Captured["queue"] }
}

/** Finalize's receipt: the final observations against what the receipt expects, recorded either way. */
export interface FinalizedReceipt extends HandoffReceipt {
  readonly finalize: {
    readonly at: string
    readonly ok: boolean
    readonly checks: FinalizeChecks
    readonly retained_outcomes: {
      readonly cancelled_jobs: ReadonlyArray<CancelledJob>
      readonly retained: ReadonlyArray<string>
    }
  }
}

/** A refusal before the target recorded anything of the transaction: what was refused. */
export interface RefusalReport {
  readonly refusal: string
  readonly detail: string
}

/** What a phase reports: the transaction's receipt (plain, interrupted or finalized), a bare refusal, or none. */
export type HandoffReport = HandoffReceipt | InterruptedReport | FinalizedReceipt | RefusalReport | null

/**
 * The answer of every phase (the wire shape is `ReconcileAnswerSchema`): `exit_code` 0 (done, or accepted and
 * under way), 1 (the phase failed: see the report), 2 (refused before it changed anything: `refusal`); `report` is
 * the transaction's receipt (or, for a refusal with no receipt of its own, what was refused). The wire schema
 * keeps the report as it is (`Schema.Unknown`): a control plane relays a target's report byte for byte, which a
 * decoding struct would re-order and trim.
 */
export interface ReconcileAnswer {
  readonly exit_code: 0 | 1 | 2
  readonly refusal: string | null
  readonly report: HandoffReport
}

/** The state a report names (none for a bare refusal or no report). */
export const reportState = (report: HandoffReport): string | undefined =>
  report !== null && "state" in report ? report.state : undefined

/** The transaction a report is of (none for a bare refusal or no report). */
export const reportTransaction = (report: HandoffReport): string | undefined =>
  report !== null && "transaction" in report ? report.transaction : undefined
