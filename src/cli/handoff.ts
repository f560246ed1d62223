import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect } from "effect"
import { ReconcilePhases, TRANSACTION_ID, TRANSACTION_ID_RULE } from "../contracts/fleet/Handoff.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/handoff.js"))

export const storageRootReconcileConfig = {
  target: Args.text({ name: "TARGET" }),
  transaction: Options.text("transaction").pipe(
    Options.withDescription(`The handoff's transaction id: ${TRANSACTION_ID_RULE}`),
    Options.mapEffect((id) =>
      TRANSACTION_ID.test(id)
        ? Effect.succeed(id)
        : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--transaction must be ${TRANSACTION_ID_RULE}`)))
    )
  ),
  phase: Options.choice("phase", ReconcilePhases).pipe(
    Options.withDescription("status (GET), or run, resume, rollback, finalize (POST)")
  ),
  here: Options.boolean("here").pipe(
    Options.withDescription("Do the phase on this host, the target (how the control plane reaches a target)")
  ),
  worker: Options.boolean("worker").pipe(
    Options.withDescription("With --here: be the detached worker that runs the recorded phase (started by --here)")
  ),
  json
}

/**
 * `ctl host storage-root-reconcile TARGET --transaction ID --phase PHASE [--json]`: a client of the control plane
 * (GET for status, POST for the others; the grant in KEEL_GRANT_FILE holds storage-reconcile-read or -apply for
 * the target). Prints the answer and exits with the report's exit_code; a refusal by the control plane itself
 * (400, 401, 503) exits 1 with its code.
 */
export const storageRootReconcile = Command.make("storage-root-reconcile", storageRootReconcileConfig, (args) =>
  impl((m) => m.storageRootReconcile(args))
).pipe(Command.withDescription("A storage-root handoff phase on a target, through the control plane"))
