import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, ParseResult, Schema } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { CurrentGrant } from "../../contracts/controlplane/FleetAuth.js"
import { InvalidReconcileRequest, ReconcileQuery } from "../../contracts/fleet/Handoff.js"
import { StorageReconcile } from "../../services/fleet/control/handoff/StorageReconcile.js"
import { reconcileRefusal } from "./FleetAuth.js"

/** A query's values by name, in the order the names were first sent (`+` a space, percent-decoded). */
const queryValues = (url: string) => {
  const seen: Record<string, Array<string>> = {}
  for (const [name, value] of new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "")) {
    const values = seen[name] ?? []
    values.push(value)
    seen[name] = values
  }
  return seen
}

/**
 * The reconcile request, checked on the raw request (the route declares no query: its rules answer
 * `INVALID_RECONCILE_REQUEST`, not the decoder's `VALIDATION_FAILED`): no body (a Content-Length above 0, or
 * chunked), then the query as ReconcileQuery decodes it, the first rule it breaks as the detail.
 */
const reconcileRequest = (method: "GET" | "POST") =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const bad = (detail: string) => new InvalidReconcileRequest({ code: "INVALID_RECONCILE_REQUEST", detail })
    const length = request.headers["content-length"]
    if ((length !== undefined && Number(length) > 0) || request.headers["transfer-encoding"] !== undefined)
      return yield* bad("the reconcile path takes no body")
    return yield* Schema.decodeUnknown(ReconcileQuery(method))(queryValues(request.url)).pipe(
      Effect.mapError((error) => bad(ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message ?? error.message))
    )
  })

/** The storage-root handoff's endpoints: its action (ReconcileAuth, 401), the request's rules (400), the target, the phase. */
export const StorageLive = HttpApiBuilder.group(ControlPlaneApi, "storage", (handlers) =>
  Effect.gen(function* () {
    const reconcile = yield* StorageReconcile
    // The credential first (ReconcileAuth: a caller without one learns nothing of the request's rules), then the
    // request, then the credential again for the target the request names (grants are scoped by host).
    const handle = (method: "GET" | "POST") =>
      Effect.gen(function* () {
        const grant = yield* CurrentGrant
        const request = yield* reconcileRequest(method)
        yield* grant.forHost(request.target).pipe(Effect.mapError(reconcileRefusal(grant.action)))
        return yield* reconcile.phase(request.target, request.transaction, request.phase)
      })
    return handlers.handle("status", () => handle("GET")).handle("apply", () => handle("POST"))
  })
)
