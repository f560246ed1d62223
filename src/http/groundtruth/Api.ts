import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { HealthStatus, Unhealthy } from "../../services/platform/Health.js"

export class GroundTruthHealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(Unhealthy)
      .annotate(OpenApi.Summary, "Liveness: ok when the service and its database answer")
  )
  .annotate(OpenApi.Title, "Health") {}

/** The ground-truth surface: private Q&A over ingested repositories (paths without prefix). */
export class GroundTruthApi extends HttpApi.make("groundtruth")
  .add(GroundTruthHealthApi)
  .annotate(OpenApi.Title, "Keel ground truth")
  .annotate(OpenApi.Description, "Ingest git repositories; search and ask with line-exact citations; brand assets.") {}
