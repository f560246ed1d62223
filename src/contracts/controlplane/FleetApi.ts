import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { FleetHostsReport } from "../fleet/FleetHosts.js"
import { GatesReport } from "../fleet/Gates.js"
import { OverviewReport } from "../fleet/Overview.js"
import { TickInProgress } from "../fleet/Reconciler.js"
import { ReconcilerStatus, ServiceListing, ServiceReport } from "../fleet/Services.js"
import { describedBy } from "./Answers.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

/** What operators look at, over HTTP: the same services and the same JSON as `ctl host gates` and `ctl overview`. */
export class FleetApi extends HttpApiGroup.make("fleet")
  .add(
    HttpApiEndpoint.get("hosts", "/fleet/hosts")
      .annotate(RequiredAction, "fleet-read")
      .addSuccess(describedBy(FleetHostsReport, "docs/control-plane.md, GET /api/fleet/hosts"))
      .annotate(
        OpenApi.Description,
        "Every registry target with its newest beacon, capacity publication and janitor report. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.get("gates", "/fleet/gates/:host")
      .annotate(RequiredAction, "fleet-read")
      .setPath(Schema.Struct({ host: Schema.String }))
      .addSuccess(describedBy(GatesReport, "The JSON of `ctl host gates HOST --json`"))
      .annotate(
        OpenApi.Description,
        "Why the host does or does not admit work (read on the host). Needs fleet-read for the host."
      )
  )
  .add(
    HttpApiEndpoint.get("overview", "/fleet/overview")
      .annotate(RequiredAction, "fleet-read")
      .addSuccess(describedBy(OverviewReport, "The JSON of `ctl overview --json`"))
      .annotate(OpenApi.Description, "Fleet, queue, quota and billing. Needs fleet-read.")
  )
  .add(
    HttpApiEndpoint.get("services", "/fleet/services")
      .annotate(RequiredAction, "fleet-read")
      .addSuccess(describedBy(ServiceListing, "The JSON of `ctl service list --json` (docs/reconciler.md)"))
      .annotate(
        OpenApi.Description,
        "Every declared service with its state in the latest reconciliation tick. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.get("serviceRunsLatest", "/fleet/services/runs/latest")
      .annotate(RequiredAction, "fleet-read")
      .addSuccess(describedBy(ReconcilerStatus, "The JSON of `ctl optimize status --json` (docs/reconciler.md)"))
      .annotate(
        OpenApi.Description,
        "The reconciler's mode, pause and breakers, and the latest tick's report. Needs fleet-read."
      )
  )
  .add(
    HttpApiEndpoint.post("runServices", "/fleet/services/runs")
      .annotate(RequiredAction, "service-ensure")
      .addSuccess(describedBy(ServiceReport, "The tick's report, as `ctl optimize run --json` prints it"))
      .addError(TickInProgress)
      .annotate(
        OpenApi.Description,
        "Runs one reconciliation tick now (what `ctl optimize run` asks the control plane for). Needs service-ensure."
      )
  )
  .middleware(FleetAuth)
  .annotate(OpenApi.Title, "Fleet") {}
