import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { InvalidReconcileRequest, TRANSACTION_ID, TRANSACTION_ID_RULE } from "../fleet/Handoff.js"
import { ReconcileAnswerSchema } from "../fleet/HandoffReport.js"
import { ReconcileAuth, RequiredAction } from "./FleetAuth.js"

/**
 * The storage-root handoff (docs/handoff.md): query `target`, `transaction`, `phase` — exactly these, once each,
 * non-empty; no body. GET is `phase=status` (storage-reconcile-read), POST `run|resume|rollback|finalize`
 * (storage-reconcile-apply).
 */
/**
 * The three query fields, for the published description: the handler checks them on the raw request itself
 * (exactly these, once each; `INVALID_RECONCILE_REQUEST`), so they are declared here rather than decoded.
 */
const reconcileParameters = (phases: ReadonlyArray<string>) => (operation: Record<string, unknown>) => ({
  ...operation,
  parameters: [
    ...((operation.parameters as Array<unknown> | undefined) ?? []),
    { name: "target", in: "query", required: true, schema: { type: "string", minLength: 1 } },
    {
      name: "transaction",
      in: "query",
      required: true,
      schema: { type: "string", pattern: TRANSACTION_ID.source },
      description: `the transaction id: ${TRANSACTION_ID_RULE}`
    },
    { name: "phase", in: "query", required: true, schema: { type: "string", enum: [...phases] } }
  ]
})

export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.get("status", "/host/storage-root-reconcile")
      .annotate(RequiredAction, "storage-reconcile-read")
      .addSuccess(ReconcileAnswerSchema)
      .annotate(OpenApi.Description, "The transaction's report; changes nothing. Needs storage-reconcile-read.")
      .annotate(OpenApi.Transform, reconcileParameters(["status"]))
  )
  .add(
    HttpApiEndpoint.post("apply", "/host/storage-root-reconcile")
      .annotate(RequiredAction, "storage-reconcile-apply")
      .addSuccess(ReconcileAnswerSchema)
      .annotate(
        OpenApi.Description,
        "Starts (or attaches to) a phase: run, resume, rollback or finalize. Accepted is not completion. Needs storage-reconcile-apply."
      )
      .annotate(OpenApi.Transform, reconcileParameters(["run", "resume", "rollback", "finalize"]))
  )
  .addError(InvalidReconcileRequest)
  .middleware(ReconcileAuth)
  .annotate(OpenApi.Title, "Storage-root handoff") {}
