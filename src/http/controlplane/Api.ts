import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ProbeResult } from "../../actors/FleetProbe.js"
import {
  ImmutableObjectWrite,
  InvalidObjectKey,
  ObjectStoreError,
  ObjectWriteUnauthorized,
  StorageFenced
} from "../../contracts/shared/ObjectErrors.js"
import { problemOpenApi } from "../../contracts/shared/ProblemContract.js"
import { IntegerFromString, RequestStruct } from "../../contracts/shared/RequestSchema.js"
import { VaultDenied, VaultForbidden } from "../../contracts/vault/Errors.js"
import { BeaconInvalid, BeaconStale, BeaconStoreFailed } from "../../services/fleet/beacon/HostHealth.js"
import { ActionNotHeld, AuthorityUnavailable } from "../../services/fleet/grants/ActionAuthority.js"
import { TRANSACTION_ID, TRANSACTION_ID_RULE } from "../../services/fleet/handoff/HandoffFiles.js"
import { StorageReconciliationFailed } from "../../services/fleet/handoff/StorageReconcile.js"
import { JobNotFound } from "../../services/fleet/jobs/JobQueue.js"
import { ObjectNotFound, PreconditionFailed } from "../../services/fleet/objects/ObjectAccess.js"

export const StoredBeaconAnswer = Schema.Struct({
  host: Schema.String,
  key: Schema.String,
  reported_at: Schema.String,
  stored_at: Schema.String
})

export class HostHealthApi extends HttpApiGroup.make("hostHealth")
  .add(
    HttpApiEndpoint.put("put", "/host-health")
      .setHeaders(Schema.Struct({ authorization: Schema.optional(Schema.String) }))
      .setPayload(Schema.Unknown)
      .addSuccess(StoredBeaconAnswer)
      .addError(BeaconInvalid)
      .addError(BeaconStale)
      .addError(BeaconStoreFailed)
      .addError(VaultDenied)
      .addError(VaultForbidden)
      .addError(ActionNotHeld)
      .addError(AuthorityUnavailable)
      .annotate(
        OpenApi.Description,
        "Stores a host-health beacon at host_health/<host>.json. Bearer token from the vault, scoped to " +
          "host-health-write for that host, of a consumer the registry lists under actions.host-health-write; " +
          "an older beacon than the stored one is 409."
      )
  )
  .annotate(OpenApi.Title, "Host health") {}

const Bearer = Schema.Struct({ authorization: Schema.optional(Schema.String) })
/** The object key is the rest of the path after /api/objects/ (slashes included). */
const ObjectKeyPath = Schema.Struct({ "*": Schema.String })

export const ObjectHeadAnswer = Schema.Struct({
  key: Schema.String,
  size: Schema.Int,
  sha256: Schema.String.annotations({ description: "Lowercase hex SHA-256 of the bytes (also the ETag)" }),
  modified_at: Schema.String
})

export class ObjectsApi extends HttpApiGroup.make("objects")
  .add(
    HttpApiEndpoint.get("list", "/objects")
      .setUrlParams(
        RequestStruct({
          prefix: Schema.optional(Schema.String),
          cursor: Schema.optional(Schema.String),
          limit: Schema.optional(
            IntegerFromString.pipe(
              Schema.int(),
              Schema.between(1, 1000),
              Schema.annotations({ message: () => "must be an integer from 1 to 1000" })
            )
          )
        })
      )
      .setHeaders(Bearer)
      .addSuccess(Schema.Struct({ objects: Schema.Array(ObjectHeadAnswer), next_cursor: Schema.NullOr(Schema.String) }))
      .annotate(
        OpenApi.Description,
        "Heads of the objects under `prefix`, in key order, `limit` (default 1000) a page; `next_cursor` (and a " +
          'Link rel="next" header) continues. Needs object-read.'
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(Bearer)
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "application/octet-stream" }))
      .addError(ObjectNotFound)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "The object's bytes, streamed; ETag and X-Object-Sha256 carry its SHA-256. Needs object-read."
      )
  )
  .add(
    HttpApiEndpoint.head("head", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(Bearer)
      .addSuccess(HttpApiSchema.Empty(200))
      .addError(ObjectNotFound)
      .addError(InvalidObjectKey)
      .annotate(OpenApi.Description, "The object's size, ETag and X-Object-Sha256, no body. Needs object-read.")
  )
  .add(
    HttpApiEndpoint.put("put", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(
        Schema.Struct({
          authorization: Schema.optional(Schema.String),
          "if-none-match": Schema.optional(
            Schema.Literal("*").annotations({
              description: "Create only: 412 when the key exists",
              message: () => "must be * (create only); the object API takes no other If-None-Match"
            })
          ),
          "if-match": Schema.optional(
            Schema.String.pipe(
              Schema.pattern(/^"?[0-9a-f]{64}"?$/),
              Schema.annotations({
                description: "Replace only while the object's SHA-256 is this one: 412 otherwise",
                message: () => "must be the object's SHA-256 (64 lowercase hex digits, optionally quoted)"
              })
            )
          )
        })
      )
      .addSuccess(ObjectHeadAnswer)
      .addSuccess(ObjectHeadAnswer, { status: 201 })
      .addError(PreconditionFailed)
      .addError(ObjectWriteUnauthorized)
      .addError(ImmutableObjectWrite)
      .addError(StorageFenced)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "Stores the request body (any bytes, streamed; at most KEEL_OBJECT_MAX_BYTES) at the key: 201 when " +
          "If-None-Match: * created it, 200 otherwise. Needs the key's write action (docs/control-plane.md)."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/objects/*")
      .setPath(ObjectKeyPath)
      .setHeaders(Bearer)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ObjectNotFound)
      .addError(ObjectWriteUnauthorized)
      .addError(ImmutableObjectWrite)
      .addError(StorageFenced)
      .addError(InvalidObjectKey)
      .annotate(
        OpenApi.Description,
        "Deletes the object: 204, or 404 when there is none. Needs the key's write action."
      )
  )
  // Every object request is authorized by registry action first (docs/control-plane.md).
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  // The store failed (a disk, the database): the request changed nothing it did not report.
  .addError(ObjectStoreError, { status: 503 })
  .annotate(OpenApi.Title, "Objects") {}

/** Another tick holds the fleet-wide `autonomy:tick` lease: try again when it ends. */
export class TickInProgressProblem extends Schema.TaggedError<TickInProgressProblem>()(
  "TickInProgressProblem",
  { code: Schema.Literal("TICK_IN_PROGRESS"), holder: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** What operators look at, over HTTP: the same services and the same JSON as `ctl host gates` and `ctl overview`. */
export class FleetApi extends HttpApiGroup.make("fleet")
  .add(
    HttpApiEndpoint.get("hosts", "/fleet/hosts")
      .setHeaders(Bearer)
      .addSuccess(Schema.Unknown.annotations({ description: "docs/control-plane.md, GET /api/fleet/hosts" }))
      .annotate(
        OpenApi.Description,
        "Every registry target with its newest beacon, capacity publication and janitor report. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.get("gates", "/fleet/gates/:host")
      .setPath(Schema.Struct({ host: Schema.String }))
      .setHeaders(Bearer)
      .addSuccess(Schema.Unknown.annotations({ description: "The JSON of `ctl host gates HOST --json`" }))
      .annotate(
        OpenApi.Description,
        "Why the host does or does not admit work (read on the host). Needs fleet-read for the host."
      )
  )
  .add(
    HttpApiEndpoint.get("overview", "/fleet/overview")
      .setHeaders(Bearer)
      .addSuccess(Schema.Unknown.annotations({ description: "The JSON of `ctl overview --json`" }))
      .annotate(OpenApi.Description, "Fleet, queue, quota and billing. Needs fleet-read.")
  )
  .add(
    HttpApiEndpoint.get("services", "/fleet/services")
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Unknown.annotations({ description: "The JSON of `ctl service list --json` (docs/reconciler.md)" })
      )
      .annotate(
        OpenApi.Description,
        "Every declared service with its state in the latest reconciliation tick. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.get("serviceRunsLatest", "/fleet/services/runs/latest")
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Unknown.annotations({ description: "The JSON of `ctl optimize status --json` (docs/reconciler.md)" })
      )
      .annotate(
        OpenApi.Description,
        "The reconciler's mode, pause and breakers, and the latest tick's report. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.post("runServices", "/fleet/services/runs")
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Unknown.annotations({ description: "The tick's report, as `ctl optimize run --json` prints it" })
      )
      .addError(TickInProgressProblem)
      .annotate(
        OpenApi.Description,
        "Runs one reconciliation tick now (what `ctl optimize run` asks the control plane for). Needs service-ensure."
      )
  )
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  .annotate(OpenApi.Title, "Fleet") {}

export class WorkflowNotFound extends Schema.TaggedError<WorkflowNotFound>()(
  "WorkflowNotFound",
  { code: Schema.Literal("WORKFLOW_NOT_FOUND"), execution_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const ProbeStarted = Schema.Struct({ execution_id: Schema.String, host: Schema.String })

export const ProbeStatus = Schema.Struct({
  execution_id: Schema.String,
  state: Schema.Literal("running", "succeeded", "failed"),
  result: Schema.NullOr(ProbeResult),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, step: Schema.String, detail: Schema.String }))
})

/** Durable workflows run by the server; `ctl` starts and inspects them here (docs/control-plane.md). */
export class ReleaseRunNotFound extends Schema.TaggedError<ReleaseRunNotFound>()(
  "ReleaseRunNotFound",
  { code: Schema.Literal("RELEASE_RUN_NOT_FOUND"), run_id: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const ReleaseRunStarted = Schema.Struct({ execution_id: Schema.String, run_id: Schema.String })

export const ReleaseRunStatus = Schema.Struct({
  run_id: Schema.String,
  /** Whether the server's workflow drives the run: running, done, or not_started (never handed over). */
  workflow: Schema.Literal("running", "done", "not_started"),
  /** The run record (docs/releases.md, "The run record"). */
  record: Schema.Unknown
})

export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.post("startProbe", "/workflows/fleet-probe")
      .setHeaders(Bearer)
      .setPayload(
        RequestStruct({
          host: Schema.String,
          request_id: Schema.optional(
            Schema.String.pipe(
              Schema.pattern(/^[A-Za-z0-9._-]{1,128}$/),
              Schema.annotations({ message: () => "must be 1-128 of A-Z a-z 0-9 . _ -" })
            )
          ),
          pause_ms: Schema.optional(
            Schema.Int.pipe(
              Schema.between(0, 60_000),
              Schema.annotations({ message: () => "must be an integer from 0 to 60000" })
            )
          )
        })
      )
      .addSuccess(ProbeStarted, { status: 202 })
      .addError(ObjectStoreError, { status: 503 })
      .addError(StorageFenced)
      .annotate(
        OpenApi.Description,
        "Starts a FleetProbe of the host (or attaches to the run of the same host and request_id). Needs fleet-read for the host."
      )
  )
  .add(
    HttpApiEndpoint.get("probeStatus", "/workflows/fleet-probe/:execution_id")
      .setPath(Schema.Struct({ execution_id: Schema.String }))
      .setHeaders(Bearer)
      .addSuccess(ProbeStatus)
      .addError(WorkflowNotFound)
      .addError(ObjectStoreError, { status: 503 })
      .annotate(
        OpenApi.Description,
        "A FleetProbe run: running, succeeded (its result) or failed (its error). Needs fleet-read for the run's host."
      )
  )
  .add(
    HttpApiEndpoint.post("startReleaseRun", "/workflows/release-run")
      .setHeaders(Bearer)
      .setPayload(RequestStruct({ run_id: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/)) }))
      .addSuccess(ReleaseRunStarted, { status: 202 })
      .addError(ReleaseRunNotFound)
      .annotate(
        OpenApi.Description,
        "Hands a submitted release run to the server: its ReleaseRun workflow drives it to published or failed (the same run attaches). Needs release-submit."
      )
  )
  .add(
    HttpApiEndpoint.get("releaseRunStatus", "/workflows/release-run/:run_id")
      .setPath(Schema.Struct({ run_id: Schema.String }))
      .setHeaders(Bearer)
      .addSuccess(ReleaseRunStatus)
      .addError(ReleaseRunNotFound)
      .annotate(
        OpenApi.Description,
        "A release run: its record and whether the server's workflow drives it (running, done, not_started). Needs fleet-read."
      )
  )
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  .annotate(OpenApi.Title, "Workflows") {}

/** The fleet control plane: host-health beacons, the object API, fleet reads, workflows (under /api). */
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

export const ReconcileAnswerSchema = Schema.Struct({
  exit_code: Schema.Literal(0, 1, 2),
  refusal: Schema.NullOr(Schema.String),
  report: Schema.Unknown
})

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
      .setHeaders(Bearer)
      .addSuccess(ReconcileAnswerSchema)
      .annotate(OpenApi.Description, "The transaction's report; changes nothing. Needs storage-reconcile-read.")
      .annotate(OpenApi.Transform, reconcileParameters(["status"]))
  )
  .add(
    HttpApiEndpoint.post("apply", "/host/storage-root-reconcile")
      .setHeaders(Bearer)
      .addSuccess(ReconcileAnswerSchema)
      .annotate(
        OpenApi.Description,
        "Starts (or attaches to) a phase: run, resume, rollback or finalize. Accepted is not completion. Needs storage-reconcile-apply."
      )
      .annotate(OpenApi.Transform, reconcileParameters(["run", "resume", "rollback", "finalize"]))
  )
  .addError(InvalidReconcileRequest)
  .addError(ReconcileUnauthorized)
  .addError(StorageReconciliationFailed)
  .annotate(OpenApi.Title, "Storage-root handoff") {}

/** A target's running jobs outlasted the drain's bounded wait (the target's pause stays: the caller restores it). */
export class QueueDrainTimedOutProblem extends Schema.TaggedError<QueueDrainTimedOutProblem>()(
  "QueueDrainTimedOutProblem",
  {
    code: Schema.Literal("QUEUE_DRAIN_TIMED_OUT"),
    target: Schema.String,
    running: Schema.Array(Schema.String),
    detail: Schema.String
  },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** The target is not in the registry, or declares no `storage`: it has no handoff and so no handoff queue. */
export class StorageUndeclaredProblem extends Schema.TaggedError<StorageUndeclaredProblem>()(
  "StorageUndeclaredProblem",
  { code: Schema.Literal("STORAGE_UNDECLARED"), target: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

export const TargetPauseSchema = Schema.Union(
  Schema.Struct({ set: Schema.Literal(false) }),
  Schema.Struct({ set: Schema.Literal(true), paused: Schema.Boolean })
)

const QueueTarget = Schema.Struct({ target: Schema.String })

/**
 * A target's queue as its handoff worker reaches it (docs/control-plane.md, "Handoff queue"): the queue lives in
 * the control plane's database, the worker on the target. Registry action `storage-queue` for the target.
 */
export class HandoffQueueApi extends HttpApiGroup.make("handoffQueue")
  .add(
    HttpApiEndpoint.get("pause", "/fleet/queue/targets/:target/pause")
      .setPath(QueueTarget)
      .setHeaders(Bearer)
      .addSuccess(Schema.Struct({ target: Schema.String, pause: TargetPauseSchema }))
      .annotate(OpenApi.Description, "The target's own queue pause (never set, false or true). Needs storage-queue.")
  )
  .add(
    HttpApiEndpoint.put("setPause", "/fleet/queue/targets/:target/pause")
      .setPath(QueueTarget)
      .setHeaders(Bearer)
      .setPayload(TargetPauseSchema)
      .addSuccess(Schema.Struct({ target: Schema.String, pause: TargetPauseSchema }))
      .annotate(
        OpenApi.Description,
        "Sets the target's own pause to exactly this (restores a capture). Needs storage-queue."
      )
  )
  .add(
    HttpApiEndpoint.post("drain", "/fleet/queue/targets/:target/drain")
      .setPath(QueueTarget)
      .setHeaders(Bearer)
      .setPayload(
        RequestStruct({
          transaction: Schema.String.pipe(Schema.minLength(1)),
          /** The caller's own bound, in seconds; the target's storage.drain_timeout_seconds caps it. */
          timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
        })
      )
      .addSuccess(
        Schema.Struct({ target: Schema.String, transaction: Schema.String, cancelled: Schema.Array(Schema.String) })
      )
      .addError(QueueDrainTimedOutProblem)
      .annotate(
        OpenApi.Description,
        "Pauses the target's queue, waits at most timeout_seconds (capped by its storage.drain_timeout_seconds) for its running jobs, then cancels its queued jobs (handoff_cancelled, the transaction). Needs storage-queue."
      )
  )
  .add(
    HttpApiEndpoint.get("cancelled", "/fleet/queue/targets/:target/cancelled")
      .setPath(QueueTarget)
      .setUrlParams(RequestStruct({ transaction: Schema.String.pipe(Schema.minLength(1)) }))
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Struct({
          target: Schema.String,
          transaction: Schema.String,
          jobs: Schema.Array(
            Schema.Struct({
              id: Schema.String,
              state: Schema.String,
              cancel_reason: Schema.NullOr(Schema.String),
              transaction: Schema.NullOr(Schema.String)
            })
          )
        })
      )
      .annotate(
        OpenApi.Description,
        "The target's jobs the transaction's drain cancelled, as they are now. Needs storage-queue."
      )
  )
  .addError(StorageUndeclaredProblem)
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  .annotate(OpenApi.Title, "Handoff queue") {}

/** A job as the jobs API answers it (docs/control-plane.md, "Jobs"): these fields of `jobView`, the others dropped. */
export const JobView = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  target: Schema.String,
  argv: Schema.Array(Schema.String),
  state: Schema.Literal("queued", "running", "succeeded", "failed", "cancelled"),
  attempt: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  exit_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String)
})

/**
 * The idempotency key names another job (another kind, target or command); `job` names it only when the caller's
 * grant covers that job's target.
 */
export class JobKeyReusedProblem extends Schema.TaggedError<JobKeyReusedProblem>()(
  "JobKeyReusedProblem",
  { code: Schema.Literal("JOB_KEY_REUSED"), job: Schema.optional(Schema.String), detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/**
 * Fleet jobs over HTTP, for clients off the control plane (a pre-check runner's gateway): submit a command to a
 * target's queue and read the job and its output (registry action `job-submit`, for the job's target); list a
 * target's queued or running jobs (`job-read` for the target: a host's janitor asks which run on it).
 */
export class JobsApi extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("submit", "/fleet/jobs")
      .setHeaders(Bearer)
      .setPayload(
        RequestStruct({
          kind: Schema.String.pipe(Schema.pattern(/^[a-z][a-z0-9-]{0,31}$/)),
          target: Schema.String.pipe(Schema.minLength(1)),
          argv: Schema.Array(Schema.String.pipe(Schema.maxLength(4096))).pipe(Schema.minItems(1), Schema.maxItems(64)),
          idempotency_key: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
        })
      )
      .addSuccess(JobView, { status: 202 })
      .addError(JobKeyReusedProblem)
      .annotate(
        OpenApi.Description,
        "Queues argv on the target (a repeat with the same idempotency_key answers the same job). Needs job-submit for the target."
      )
  )
  .add(
    HttpApiEndpoint.get("live", "/fleet/jobs")
      .setUrlParams(
        RequestStruct({
          target: Schema.String.pipe(Schema.minLength(1)),
          state: Schema.Literal("queued", "running")
        })
      )
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Struct({
          target: Schema.String,
          state: Schema.Literal("queued", "running"),
          jobs: Schema.Array(JobView)
        })
      )
      .annotate(
        OpenApi.Description,
        "The target's jobs in that state, oldest first (a host's janitor asks which run on it). Needs job-read for the target."
      )
  )
  .add(
    HttpApiEndpoint.get("job", "/fleet/jobs/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setUrlParams(
        RequestStruct({
          cursor: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.nonNegative())),
          limit: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.between(1, 1000)))
        })
      )
      .setHeaders(Bearer)
      .addSuccess(
        Schema.Struct({
          job: JobView,
          output: Schema.Struct({
            lines: Schema.Array(
              Schema.Struct({ line_no: Schema.Int, stream: Schema.Literal("stdout", "stderr"), line: Schema.String })
            ),
            next: Schema.Int
          })
        })
      )
      .addError(JobNotFound)
      .annotate(
        OpenApi.Description,
        "The job and a page of its output after `cursor` (a line number; `next` continues). Needs job-submit for the job's target."
      )
  )
  .addError(VaultDenied)
  .addError(VaultForbidden)
  .addError(ActionNotHeld)
  .addError(AuthorityUnavailable)
  .annotate(OpenApi.Title, "Jobs") {}

export class ControlPlaneApi extends HttpApi.make("controlplane")
  .add(HostHealthApi)
  .add(ObjectsApi)
  .add(FleetApi)
  .add(WorkflowsApi)
  .add(StorageApi)
  .add(HandoffQueueApi)
  .add(JobsApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel fleet control plane")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Host-health beacons and the storage-root handoff saga.") {}
