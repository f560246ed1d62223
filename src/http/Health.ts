import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { HealthStatus, Unhealthy } from "../services/platform/Health.js"

/** `GET /health`: the one liveness probe, mounted by the ground-truth (as is) and product (under /api) surfaces. */
export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(Unhealthy)
      .annotate(OpenApi.Summary, "Liveness: ok when the service and its database answer")
  )
  .annotate(OpenApi.Title, "Health") {}
