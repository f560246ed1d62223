// The module itself, not the package index: the index would bring every platform module into `ctl`'s start-up.
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"

/**
 * A transaction id: 1–128 letters, digits, `.`, `_`, `-`, starting with a letter or digit. It names a directory
 * under `<data dir>/handoff/`, so `..`, `a/b` or a NUL could never be one (they would write outside it, or alias
 * another transaction's receipt).
 */
export const TRANSACTION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
export const TRANSACTION_ID_RULE = "1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"

export const ReconcilePhases = ["status", "run", "resume", "rollback", "finalize"] as const
export type ReconcilePhase = (typeof ReconcilePhases)[number]

/** Verifier state unavailable, or a failure before any product report exists (seed 002: 503). */
export class StorageReconciliationFailed extends Schema.TaggedError<StorageReconciliationFailed>()(
  "StorageReconciliationFailed",
  { code: Schema.Literal("STORAGE_RECONCILIATION_FAILED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** A reconcile request that does not fit its rules (docs/handoff.md, "Endpoints"). */
export class InvalidReconcileRequest extends Schema.TaggedError<InvalidReconcileRequest>()(
  "InvalidReconcileRequest",
  { code: Schema.Literal("INVALID_RECONCILE_REQUEST"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/** No token, or one whose grant or consumer does not hold the phase's registry action (seed: 401). */
export class ReconcileUnauthorized extends Schema.TaggedError<ReconcileUnauthorized>()(
  "ReconcileUnauthorized",
  {
    code: Schema.Literal("STORAGE_RECONCILE_UNAUTHORIZED"),
    action: Schema.String,
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** A target's own pause as it was: absent (never set), or set to a value — restored exactly. */
export const TargetPauseSchema = Schema.Union(
  Schema.Struct({ set: Schema.Literal(false) }),
  Schema.Struct({ set: Schema.Literal(true), paused: Schema.Boolean })
)

/** A job a handoff's drain cancelled, as Finalize lists it among the retained outcomes. */
export const CancelledJobSchema = Schema.Struct({
  id: Schema.String,
  state: Schema.String,
  cancel_reason: Schema.NullOr(Schema.String),
  transaction: Schema.NullOr(Schema.String)
})

/**
 * A target's running jobs outlasted the drain's bounded wait (the target's pause stays: the caller restores it).
 * The queue fails with it, the handoff sees it, the queue endpoint answers it (409).
 */
export class QueueDrainTimedOut extends Schema.TaggedError<QueueDrainTimedOut>()(
  "QueueDrainTimedOut",
  {
    code: Schema.Literal("QUEUE_DRAIN_TIMED_OUT"),
    target: Schema.String,
    running: Schema.Array(Schema.String),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** The target is not in the registry, or declares no `storage`: it has no handoff and so no handoff queue. */
export class StorageUndeclared extends Schema.TaggedError<StorageUndeclared>()(
  "StorageUndeclared",
  { code: Schema.Literal("STORAGE_UNDECLARED"), target: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

const RECONCILE_FIELDS = ["target", "transaction", "phase"] as const

/** A query field sent exactly once, not empty (the reconcile path's rule: each message is the answer's detail). */
const sentOnce = (name: string) =>
  Schema.Array(Schema.String).pipe(
    Schema.filter((values) =>
      values.length === 0
        ? `${name} is required`
        : values.length > 1
          ? `${name} is given ${values.length} times`
          : values[0] === ""
            ? `${name} is empty`
            : true
    ),
    Schema.transform(Schema.String, {
      strict: true,
      decode: (values) => values[0] ?? "",
      encode: (value) => [value]
    })
  )

/** Only the three fields, in the order they were first sent (an unknown one is named, at most 80 characters). */
const OnlyReconcileFields = Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) }).pipe(
  Schema.filter((query) => {
    const unknown = Object.keys(query).find((name) => !(RECONCILE_FIELDS as ReadonlyArray<string>).includes(name))
    return (
      unknown === undefined ||
      `unknown query field ${JSON.stringify(unknown).slice(0, 80)}: only target, transaction, phase`
    )
  })
)

const ReconcileFields = Schema.Struct({
  target: sentOnce("target"),
  transaction: sentOnce("transaction"),
  phase: sentOnce("phase")
})

/**
 * The storage-root reconcile path's query (docs/handoff.md, "Endpoints"), decoded from each field's values as
 * sent: exactly `target`, `transaction`, `phase`, once each and non-empty; a transaction id; a phase of the
 * method (GET: status; POST: run, resume, rollback, finalize). Each refusal's message is the 400's detail.
 */
export const ReconcileQuery = (method: "GET" | "POST") =>
  OnlyReconcileFields.pipe(
    Schema.transform(Schema.encodedSchema(ReconcileFields), {
      strict: false,
      decode: (query) => ({
        target: query.target ?? [],
        transaction: query.transaction ?? [],
        phase: query.phase ?? []
      }),
      encode: (fields) => fields
    }),
    Schema.compose(ReconcileFields),
    Schema.filter((fields) =>
      !TRANSACTION_ID.test(fields.transaction)
        ? `transaction must be ${TRANSACTION_ID_RULE}`
        : !(ReconcilePhases as ReadonlyArray<string>).includes(fields.phase)
          ? `phase must be one of ${ReconcilePhases.join(", ")}`
          : method === "GET" && fields.phase !== "status"
            ? `GET takes phase=status; ${fields.phase} is a POST`
            : method === "POST" && fields.phase === "status"
              ? "phase=status is a GET"
              : true
    ),
    Schema.transform(
      Schema.Struct({ target: Schema.String, transaction: Schema.String, phase: Schema.Literal(...ReconcilePhases) }),
      { strict: false, decode: (fields) => fields, encode: (fields) => fields }
    )
  )
