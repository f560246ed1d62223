import * as Workflow from "@effect/workflow/Workflow"
import { Schema } from "effect"
import { HandoffReceipt } from "./HandoffReport.js"

/**
 * The storage-root handoff's two durable workflows (docs/handoff.md), their payload and answer: the receipt a target
 * keeps, whose schema is in HandoffReport.ts beside the answer of a reconcile phase. No runtime code: the workflows'
 * bodies are in `src/actors/StorageHandoff.ts`, their steps in `src/services/fleet/agent/handoff/`. Only `effect` and
 * the workflow definition module (not the engine) are imported.
 */

/** A phase refused, with the seed's refusal reason (docs/handoff.md); state was restored where it had changed. */
export class HandoffRefused extends Schema.TaggedError<HandoffRefused>()("HandoffRefused", {
  code: Schema.Literal("HANDOFF_REFUSED"),
  refusal: Schema.String,
  detail: Schema.String
}) {}

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
