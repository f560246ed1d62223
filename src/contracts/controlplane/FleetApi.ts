import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ActionNotHeld, AuthorityUnavailable } from "../fleet/Authority.js"
import { TickInProgressProblem } from "../fleet/Reconciler.js"
import { VaultDenied, VaultForbidden } from "../vault/Errors.js"
import { Bearer } from "./Common.js"

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
