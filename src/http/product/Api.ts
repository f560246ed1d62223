import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { HealthStatus, Unhealthy } from "../../services/platform/Health.js"

export class ProductHealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthStatus)
      .addError(Unhealthy)
      .annotate(OpenApi.Summary, "Liveness probe: ok when the service and its database answer")
  )
  .annotate(OpenApi.Title, "Health") {}

/** The product-client machine API: experiments, analytics collectors, public blog, health (under /api). */
export class ProductApi extends HttpApi.make("product")
  .add(ProductHealthApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel product-client API")
  .annotate(OpenApi.Description, "Sticky experiment assignment, analytics collectors, public blog, onboarding.") {}
