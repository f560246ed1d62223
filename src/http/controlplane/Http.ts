import { randomUUID } from "node:crypto"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Exit, Option, ParseResult, Schema, Stream } from "effect"
import { ControlPlaneApi } from "../../contracts/controlplane/Api.js"
import { CurrentGrant } from "../../contracts/controlplane/FleetAuth.js"
import { AuthorityUnavailable } from "../../contracts/fleet/Authority.js"
import { FleetProbe } from "../../contracts/fleet/FleetProbe.js"
import { InvalidReconcileRequest, ReconcileQuery } from "../../contracts/fleet/Handoff.js"
import { WorkflowNotFound } from "../../contracts/fleet/Probe.js"
import { ReleaseRunWorkflow } from "../../contracts/fleet/ReleaseRun.js"
import { InvalidObjectKey, ObjectStoreError } from "../../contracts/shared/ObjectErrors.js"
import { HostHealth } from "../../services/fleet/beacon/HostHealth.js"
import { Gates } from "../../services/fleet/gates/Gates.js"
import { StorageReconcile } from "../../services/fleet/handoff/StorageReconcile.js"
import { TargetQueue } from "../../services/fleet/handoff/TargetQueue.js"
import { JobQueue } from "../../services/fleet/jobs/JobQueue.js"
import { jobView } from "../../services/fleet/jobs/JobView.js"
import { ObjectAccess } from "../../services/fleet/objects/ObjectAccess.js"
import { FleetHosts } from "../../services/fleet/overview/FleetHosts.js"
import { Overview } from "../../services/fleet/overview/Overview.js"
import { probeHost, startProbe } from "../../services/fleet/probe/HostProbe.js"
import { ServiceReconciler } from "../../services/fleet/reconciler/ServiceReconciler.js"
import { ServiceViews } from "../../services/fleet/reconciler/ServiceViews.js"
import { RunRecords } from "../../services/fleet/releases/RunRecords.js"
import { bearerToken } from "../../services/platform/Credentials.js"
import type { ObjectHead, WriteCondition } from "../../services/platform/objects/ObjectStore.js"
import { originStripped } from "../RoutePath.js"
import { grantForHost, reconcileRefusal } from "./FleetAuth.js"

export const HostHealthLive = HttpApiBuilder.group(ControlPlaneApi, "hostHealth", (handlers) =>
  Effect.gen(function* () {
    const health = yield* HostHealth
    return handlers.handle("put", ({ headers, payload }) =>
      Effect.gen(function* () {
        return yield* health.store(bearerToken(headers.authorization), payload)
      })
    )
  })
)

const etag = (sha256: string) => `"${sha256}"`

const headHeaders = (head: ObjectHead) => ({
  etag: etag(head.sha256),
  "x-object-sha256": head.sha256,
  "last-modified": new Date(head.modifiedAt).toUTCString()
})

const headAnswer = (head: ObjectHead) => ({
  key: head.key,
  size: head.size,
  sha256: head.sha256,
  modified_at: new Date(head.modifiedAt).toISOString()
})

/** `If-Match: "<sha256>"` (quotes optional, as ETags are quoted), `If-None-Match: *`, or neither. */
const conditionOf = (headers: {
  readonly "if-match"?: string | undefined
  readonly "if-none-match"?: string | undefined
}): WriteCondition =>
  headers["if-none-match"] === "*"
    ? { kind: "absent" }
    : headers["if-match"] !== undefined
      ? { kind: "match", sha256: headers["if-match"].replace(/"/g, "") }
      : { kind: "always" }

/**
 * The part of a request path after its `/api/objects/` prefix, as sent: the prefix read as the router reads it
 * (a full URL's scheme and host skipped, repeated slashes, any case, percent-encoded letters), the key untouched.
 */
export const encodedObjectKey = (url: string) => {
  const pathname = originStripped(url).split(/[?#]/)[0] ?? ""
  const segments = pathname.split("/")
  let at = 0
  for (const name of ["api", "objects"]) {
    while (at < segments.length && segments[at] === "") at++
    const segment = segments[at] ?? ""
    let decoded = segment
    try {
      decoded = decodeURIComponent(segment)
    } catch {}
    if (decoded.toLowerCase() !== name) return pathname
    at++
  }
  return segments.slice(at).join("/")
}

/**
 * The key as the client wrote it: the request path after /api/objects/, percent-decoded. The router's own
 * parameter has duplicate and trailing slashes folded and dot segments resolved, which would turn an invalid
 * key into another valid one; a key is refused (400 INVALID_OBJECT_KEY), never reinterpreted.
 */
const objectKeyOf: Effect.Effect<string, InvalidObjectKey, HttpServerRequest.HttpServerRequest> = Effect.gen(
  function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const encoded = encodedObjectKey(request.url)
    // The router reads a bare ';' as the end of the path: the key it routed by would not be the key named here.
    if (encoded.includes(";")) {
      return yield* new InvalidObjectKey({
        code: "INVALID_OBJECT_KEY",
        key: encoded,
        detail: "a ';' in an object key must be percent-encoded (%3B)"
      })
    }
    try {
      return decodeURIComponent(encoded)
    } catch {
      return yield* new InvalidObjectKey({
        code: "INVALID_OBJECT_KEY",
        key: encoded,
        detail: "an object key must be valid percent-encoded UTF-8"
      })
    }
  }
)

/** The object API: handlers are thin, ObjectAccess holds the rules; bodies stream both ways. */
export const ObjectsLive = HttpApiBuilder.group(ControlPlaneApi, "objects", (handlers) =>
  Effect.gen(function* () {
    const access = yield* ObjectAccess
    return handlers
      .handle("list", ({ headers, urlParams }) =>
        Effect.gen(function* () {
          const prefix = urlParams.prefix ?? ""
          const limit = urlParams.limit ?? 1000
          const page = yield* access.list(bearerToken(headers.authorization), prefix, urlParams.cursor, limit)
          const body = { objects: page.objects.map(headAnswer), next_cursor: page.next }
          if (page.next === null) return body
          const query = new URLSearchParams({ prefix, limit: String(limit), cursor: page.next })
          return HttpServerResponse.unsafeJson(body, { headers: { link: `</api/objects?${query}>; rel="next"` } })
        })
      )
      .handle("get", ({ headers }) =>
        Effect.gen(function* () {
          const found = yield* access.read(bearerToken(headers.authorization), yield* objectKeyOf)
          return HttpServerResponse.stream(found.body, {
            contentType: "application/octet-stream",
            contentLength: found.head.size,
            headers: headHeaders(found.head)
          })
        })
      )
      .handle("head", ({ headers }) =>
        Effect.gen(function* () {
          const head = yield* access.head(bearerToken(headers.authorization), yield* objectKeyOf)
          return HttpServerResponse.empty({
            status: 200,
            headers: { ...headHeaders(head), "content-length": String(head.size) }
          })
        })
      )
      .handle("put", ({ headers }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const key = yield* objectKeyOf
          // A body that cannot be read to its end (the client went away) stores nothing.
          const body = Stream.mapError(
            request.stream,
            () =>
              new ObjectStoreError({
                code: "OBJECT_STORE_ERROR",
                key,
                detail: "the request body could not be read to its end"
              })
          )
          const { created, head } = yield* access.write(
            bearerToken(headers.authorization),
            key,
            body,
            conditionOf(headers)
          )
          return HttpServerResponse.unsafeJson(headAnswer(head), {
            status: created ? 201 : 200,
            headers: { etag: etag(head.sha256) }
          })
        })
      )
      .handle("delete", ({ headers }) =>
        Effect.flatMap(objectKeyOf, (key) => access.delete(bearerToken(headers.authorization), key))
      )
  })
)

/** Fleet reads: authorized by FleetAuth (`fleet-read`), answered by the services the CLI uses, in the same JSON. */
export const FleetLive = HttpApiBuilder.group(ControlPlaneApi, "fleet", (handlers) =>
  Effect.gen(function* () {
    const hosts = yield* FleetHosts
    const gates = yield* Gates
    const overview = yield* Overview
    const reconciler = yield* ServiceReconciler
    const views = yield* ServiceViews
    const registryUnavailable = (error: { readonly detail: string }) =>
      Effect.fail(new AuthorityUnavailable({ code: "REGISTRY_UNAVAILABLE", detail: error.detail }))
    return handlers
      .handle("hosts", () => hosts.list().pipe(Effect.catchAll(registryUnavailable)))
      .handle("gates", ({ path }) => Effect.zipRight(grantForHost(path.host), gates.report(path.host)))
      .handle("overview", () => overview.report())
      .handle("services", () => views.listing.pipe(Effect.catchAll(registryUnavailable)))
      .handle("serviceRunsLatest", () => views.status.pipe(Effect.catchAll(registryUnavailable)))
      .handle("runServices", () =>
        reconciler.tick("manual").pipe(
          Effect.catchTags({
            FleetRegistryUnavailable: registryUnavailable,
            FleetRegistryInvalid: registryUnavailable,
            // Only a converge names one service; a tick cannot fail this way.
            UnknownService: Effect.die
          })
        )
      )
  })
)

/** FleetProbe runs: started without waiting (the run lives in the server), polled by execution id. */
export const WorkflowsLive = HttpApiBuilder.group(ControlPlaneApi, "workflows", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* RunRecords
    const recordOf = runs.recordOf
    return handlers
      .handle("startProbe", ({ payload }) =>
        Effect.gen(function* () {
          // The probe runs a command on the host: the grant must cover it, as every route naming a host asks.
          yield* grantForHost(payload.host)
          const executionId = yield* startProbe({
            host: payload.host,
            request_id: payload.request_id ?? randomUUID(),
            pause_ms: payload.pause_ms ?? 0
          })
          return { execution_id: executionId, host: payload.host }
        })
      )
      .handle("startReleaseRun", ({ payload }) =>
        Effect.gen(function* () {
          yield* recordOf(payload.run_id)
          const executionId = yield* ReleaseRunWorkflow.execute({ run_id: payload.run_id }, { discard: true })
          return { execution_id: executionId, run_id: payload.run_id }
        })
      )
      .handle("releaseRunStatus", ({ path }) =>
        Effect.gen(function* () {
          const record = yield* recordOf(path.run_id)
          const result = yield* ReleaseRunWorkflow.poll(yield* ReleaseRunWorkflow.executionId({ run_id: path.run_id }))
          const workflow =
            result === undefined
              ? ("not_started" as const)
              : result._tag === "Suspended"
                ? ("running" as const)
                : ("done" as const)
          return { run_id: path.run_id, workflow, record }
        })
      )
      .handle("probeStatus", ({ path }) =>
        Effect.gen(function* () {
          // An execution id is the workflow engine's 32 hexadecimal digits: anything else (an id with whitespace
          // around it) names no run and is never handed to the engine, which fails on it.
          if (!/^[0-9a-f]{32}$/.test(path.execution_id))
            return yield* new WorkflowNotFound({
              code: "WORKFLOW_NOT_FOUND",
              execution_id: path.execution_id.slice(0, 80),
              detail: "no FleetProbe run: an execution id is 32 hexadecimal digits"
            })
          const result = yield* FleetProbe.poll(path.execution_id)
          if (result === undefined)
            return yield* new WorkflowNotFound({
              code: "WORKFLOW_NOT_FOUND",
              execution_id: path.execution_id,
              detail: `no FleetProbe run ${path.execution_id}`
            })
          // A run is its host's: the grant must cover the host it probes (recorded at start; for a run started
          // before hosts were recorded, the host its result names).
          const host = yield* probeHost(path.execution_id, result)
          if (Option.isSome(host)) yield* grantForHost(host.value)
          if (result._tag === "Suspended")
            return { execution_id: path.execution_id, state: "running" as const, result: null, error: null }
          return Exit.match(result.exit, {
            onSuccess: (value) => ({
              execution_id: path.execution_id,
              state: "succeeded" as const,
              result: value,
              error: null
            }),
            onFailure: (cause) => {
              const failure = Cause.failureOption(cause)
              const error = Option.isSome(failure)
                ? { code: failure.value.code, step: failure.value.step, detail: failure.value.detail }
                : { code: "PROBE_FAILED", step: "unknown", detail: Cause.pretty(cause).split("\n")[0] ?? "failed" }
              return { execution_id: path.execution_id, state: "failed" as const, result: null, error }
            }
          })
        })
      )
  })
)

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

/** A target's queue for its handoff worker: `storage-queue` for the target, and the target must declare storage. */
export const HandoffQueueLive = HttpApiBuilder.group(ControlPlaneApi, "handoffQueue", (handlers) =>
  Effect.gen(function* () {
    const queue = yield* TargetQueue
    // A registry the queue could not read answers as every unreadable registry does (503).
    const problems = {
      HandoffQueueUnavailable: (e: { readonly detail: string }) =>
        Effect.fail(new AuthorityUnavailable({ code: "REGISTRY_UNAVAILABLE", detail: e.detail }))
    }
    return handlers
      .handle("pause", ({ path }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          return { target: path.target, pause: yield* queue.pause(path.target).pipe(Effect.catchTags(problems)) }
        })
      )
      .handle("setPause", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const pause = yield* queue.setPause(path.target, payload).pipe(Effect.catchTags(problems))
          return { target: path.target, pause }
        })
      )
      .handle("drain", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const cancelled = yield* queue
            .drain(path.target, payload.transaction, payload.timeout_seconds)
            .pipe(Effect.catchTags(problems))
          return { target: path.target, transaction: payload.transaction, cancelled }
        })
      )
      .handle("cancelled", ({ path, urlParams }) =>
        Effect.gen(function* () {
          yield* grantForHost(path.target)
          const jobs = yield* queue.cancelledBy(path.target, urlParams.transaction).pipe(Effect.catchTags(problems))
          return { target: path.target, transaction: urlParams.transaction, jobs }
        })
      )
  })
)

/** Fleet jobs for clients off the control plane: `job-submit` for the job's target (docs/control-plane.md, "Jobs"). */
export const JobsLive = HttpApiBuilder.group(ControlPlaneApi, "jobs", (handlers) =>
  Effect.gen(function* () {
    const queue = yield* JobQueue
    return handlers
      .handle("submit", ({ payload }) =>
        Effect.gen(function* () {
          yield* grantForHost(payload.target)
          const job = yield* queue.submitAs(
            { kind: payload.kind, target: payload.target, argv: payload.argv, idempotencyKey: payload.idempotency_key },
            // Another target's job is not this caller's to learn about (its id, target or command).
            (target) => Effect.isSuccess(grantForHost(target))
          )
          return jobView(job)
        })
      )
      .handle("live", ({ urlParams }) =>
        Effect.gen(function* () {
          yield* grantForHost(urlParams.target)
          const jobs = yield* queue.liveOn(urlParams.target, urlParams.state)
          return { target: urlParams.target, state: urlParams.state, jobs: jobs.map(jobView) }
        })
      )
      .handle("job", ({ path, urlParams }) =>
        Effect.gen(function* () {
          // FleetAuth checked the action first (a caller without it learns nothing about ids); then the job's target.
          const job = yield* queue.get(path.id)
          yield* grantForHost(job.target)
          const page = yield* queue.output(job.id, urlParams.cursor ?? 0, urlParams.limit ?? 500)
          return {
            job: jobView(job),
            output: {
              lines: page.lines.map((l) => ({ line_no: l.lineNo, stream: l.stream, line: l.line })),
              next: page.next
            }
          }
        })
      )
  })
)
