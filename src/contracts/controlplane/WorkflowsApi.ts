import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ProbeStarted, ProbeStatus, WorkflowNotFound } from "../fleet/Probe.js"
import { ReleaseRunNotFound, ReleaseRunStarted, ReleaseRunStatus, RunId } from "../fleet/ReleaseRuns.js"
import { ObjectStoreError, StorageFenced } from "../shared/ObjectErrors.js"
import { RequestStruct } from "../shared/RequestSchema.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

/** Durable workflows run by the server; `ctl` starts and inspects them here (docs/control-plane.md). */
export class WorkflowsApi extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.post("startProbe", "/workflows/fleet-probe")
      .annotate(RequiredAction, "fleet-read")
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
      .annotate(RequiredAction, "fleet-read")
      .setPath(Schema.Struct({ execution_id: Schema.String }))
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
      .annotate(RequiredAction, "release-submit")
      .setPayload(RequestStruct({ run_id: RunId }))
      .addSuccess(ReleaseRunStarted, { status: 202 })
      .addError(ReleaseRunNotFound)
      .annotate(
        OpenApi.Description,
        "Hands a submitted release run to the server: its ReleaseRun workflow drives it to published or failed (the same run attaches). Needs release-submit."
      )
  )
  .add(
    HttpApiEndpoint.get("releaseRunStatus", "/workflows/release-run/:run_id")
      .annotate(RequiredAction, "fleet-read")
      .setPath(Schema.Struct({ run_id: Schema.String }))
      .addSuccess(ReleaseRunStatus)
      .addError(ReleaseRunNotFound)
      .annotate(
        OpenApi.Description,
        "A release run: its record and whether the server's workflow drives it (running, done, not_started). Needs fleet-read."
      )
  )
  .middleware(FleetAuth)
  .annotate(OpenApi.Title, "Workflows") {}
