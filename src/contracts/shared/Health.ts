import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"

export class HealthStatus extends Schema.Class<HealthStatus>("HealthStatus")({
  status: Schema.Literal("ok")
}) {}

export class Unhealthy extends Schema.TaggedError<Unhealthy>()(
  "Unhealthy",
  { detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** `GET /health`: the one liveness probe, mounted by the ground-truth (as is) and product (under /api) surfaces. */
export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(Unhealthy)
      .annotate(OpenApi.Summary, "Liveness: ok when the service and its database answer")
  )
  .annotate(OpenApi.Title, "Health") {}
