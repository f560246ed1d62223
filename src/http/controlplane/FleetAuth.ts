import { HttpApi, HttpRouter, HttpServerRequest } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import {
  type AuthorityRefusal,
  type ControlPlaneAction,
  CurrentGrant,
  FleetAuth,
  ReconcileAuth,
  RequiredAction
} from "../../contracts/controlplane/FleetAuth.js"
import { ReconcileUnauthorized, StorageReconciliationFailed } from "../../contracts/fleet/Handoff.js"
import { ActionAuthority } from "../../services/fleet/control/grants/ActionAuthority.js"
import { bearerToken } from "../../services/platform/Credentials.js"

/**
 * Each endpoint's `RequiredAction` by `METHOD path`, the way the router names the route it matched: the
 * middleware runs before the request is decoded, and the route is all it knows of the endpoint.
 */
export const requiredActions = (api: HttpApi.HttpApi.Any): ReadonlyMap<string, ControlPlaneAction> => {
  const actions = new Map<string, ControlPlaneAction>()
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, mergedAnnotations }) => {
      const action = Context.getOption(mergedAnnotations, RequiredAction)
      if (action._tag === "Some") actions.set(`${endpoint.method} ${endpoint.path}`, action.value)
    }
  })
  return actions
}

/**
 * The one authorization rule (ActionAuthority) for the route's action, the token read as sent (the scheme in any
 * case, as everywhere; the platform's decoded credential is not used). The grant it answers checks a host with the
 * same rule, so a refusal for a host is the vault's own (403 VAULT_FORBIDDEN, audited there).
 */
const grantOf = (authority: ActionAuthority, actions: ReadonlyMap<string, ControlPlaneAction>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { route } = yield* HttpRouter.RouteContext
    const action = actions.get(`${route.method} ${route.path}`)
    // A contract without the annotation is a bug in this code, never a request to let through.
    if (action === undefined)
      return yield* Effect.dieMessage(`${route.method} ${route.path} declares no RequiredAction`)
    const token = bearerToken(request.headers.authorization)
    const grant = yield* authority.authorize(token, { action })
    return CurrentGrant.of({
      action,
      consumer: grant.consumer,
      forHost: (host: string) => Effect.asVoid(authority.authorize(token, { action, host }))
    })
  })

export const FleetAuthLive = Layer.effect(
  FleetAuth,
  Effect.gen(function* () {
    const authority = yield* ActionAuthority
    const actions = requiredActions(ControlPlaneApi)
    return FleetAuth.of({ bearer: () => grantOf(authority, actions) })
  })
)

/** The reconcile path's answer to a refused authorization (seed 002): 401 for the credential, 503 for the verifier. */
export const reconcileRefusal =
  (action: ControlPlaneAction) =>
  (error: AuthorityRefusal): ReconcileUnauthorized | StorageReconciliationFailed =>
    error._tag === "AuthorityUnavailable"
      ? new StorageReconciliationFailed({
          code: "STORAGE_RECONCILIATION_FAILED",
          detail: `verifier state unavailable: ${error.detail}`
        })
      : new ReconcileUnauthorized({ code: "STORAGE_RECONCILE_UNAUTHORIZED", action, detail: error.detail })

export const ReconcileAuthLive = Layer.effect(
  ReconcileAuth,
  Effect.gen(function* () {
    const authority = yield* ActionAuthority
    const actions = requiredActions(ControlPlaneApi)
    return ReconcileAuth.of({
      bearer: () =>
        Effect.gen(function* () {
          const { route } = yield* HttpRouter.RouteContext
          const action = actions.get(`${route.method} ${route.path}`) ?? "storage-reconcile-apply"
          return yield* grantOf(authority, actions).pipe(Effect.mapError(reconcileRefusal(action)))
        })
    })
  })
)

/** The request's grant, for the host the request names (its path, query or body, or the resource it names). */
export const grantForHost = (host: string) => Effect.flatMap(CurrentGrant, (grant) => grant.forHost(host))
