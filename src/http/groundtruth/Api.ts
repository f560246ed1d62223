import { HttpApi, OpenApi } from "@effect/platform"
import { HealthApi } from "../Health.js"

/** The ground-truth surface: private Q&A over ingested repositories (paths without prefix). */
export class GroundTruthApi extends HttpApi.make("groundtruth")
  .add(HealthApi)
  .annotate(OpenApi.Title, "Keel ground truth")
  .annotate(OpenApi.Description, "Ingest git repositories; search and ask with line-exact citations; brand assets.") {}
