import { HttpApi, OpenApi } from "@effect/platform"
import { HealthApi } from "../Health.js"

/** The product-client machine API: experiments, analytics collectors, public blog, health (under /api). */
export class ProductApi extends HttpApi.make("product")
  .add(HealthApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel product-client API")
  .annotate(OpenApi.Description, "Sticky experiment assignment, analytics collectors, public blog, onboarding.") {}
