import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, type Effect, Schema } from "effect"
import { ActionNotHeld, AuthorityUnavailable } from "../fleet/Authority.js"
import { ReconcileUnauthorized, StorageReconciliationFailed } from "../fleet/Handoff.js"
import { VaultDenied, VaultForbidden } from "../vault/Errors.js"

/** The registry actions the control plane's routes ask for (registry `actions:`, docs/control-plane.md). */
export type ControlPlaneAction =
  | "host-health-write"
  | "object-read"
  | "fleet-read"
  | "service-ensure"
  | "release-submit"
  | "storage-queue"
  | "storage-reconcile-read"
  | "storage-reconcile-apply"
  | "job-submit"
  | "job-read"

/**
 * The registry action an endpoint needs, as an endpoint annotation: `.annotate(RequiredAction, "fleet-read")`.
 * The authorization middleware reads it off the endpoint the request was routed to.
 */
export class RequiredAction extends Context.Tag("controlplane/RequiredAction")<RequiredAction, ControlPlaneAction>() {}

/** Why a control-plane request was refused: the token (401), its grant or consumer (403), the registry (503). */
export type AuthorityRefusal = VaultDenied | VaultForbidden | ActionNotHeld | AuthorityUnavailable

/**
 * What the authorization middleware proved for this request: the token's grant holds the endpoint's action and
 * the registry lists its consumer. A route that names a host (in its path, query or body, or through the resource
 * it names) asks again for that host: grants are scoped by host.
 */
export class CurrentGrant extends Context.Tag("controlplane/CurrentGrant")<
  CurrentGrant,
  {
    readonly action: ControlPlaneAction
    readonly consumer: string
    /** The same rule for the host the request acts on (403 VAULT_FORBIDDEN when the grant does not cover it). */
    readonly forHost: (host: string) => Effect.Effect<void, AuthorityRefusal>
  }
>() {}

const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "A vault token (`ctl vault token`) whose grant holds the route's registry action (for the host it names), of a " +
      "consumer the registry lists under that action (docs/control-plane.md)."
  )
)

/** Control-plane authorization: a vault token, the endpoint's registry action (`RequiredAction`), the registry. */
export class FleetAuth extends HttpApiMiddleware.Tag<FleetAuth>()("controlplane/FleetAuth", {
  failure: Schema.Union(VaultDenied, VaultForbidden, ActionNotHeld, AuthorityUnavailable),
  provides: CurrentGrant,
  security: { bearer }
}) {}

/**
 * The same rule on the storage-root reconcile path, answered as its seed says: every refusal is 401
 * `STORAGE_RECONCILE_UNAUTHORIZED`, an unreadable registry 503 `STORAGE_RECONCILIATION_FAILED`.
 */
export class ReconcileAuth extends HttpApiMiddleware.Tag<ReconcileAuth>()("controlplane/ReconcileAuth", {
  failure: Schema.Union(ReconcileUnauthorized, StorageReconciliationFailed),
  provides: CurrentGrant,
  security: { bearer }
}) {}
