import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AppNotFound, Assignment, InvalidClientKey } from "../../services/product/Assigner.js"
import { HealthApi } from "../Health.js"

const Param = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

export const ClientKeyHeader = Schema.Struct({
  "x-client-key": Schema.optional(Schema.String).annotations({
    description: "A publishable client key of the app (from the journey registry)"
  })
})

export class ExperimentsApi extends HttpApiGroup.make("experiments")
  .add(
    HttpApiEndpoint.get("assign", "/experiments/assign")
      .setUrlParams(Schema.Struct({ app_id: Param, platform: Param, surface: Param, subject: Param }))
      .setHeaders(ClientKeyHeader)
      .addSuccess(Assignment)
      .addError(InvalidClientKey)
      .addError(AppNotFound)
      .annotate(
        OpenApi.Description,
        "Sticky assignment of a subject to the experiment of a journey. The empty assignment " +
          '{"variant":null,"config":{},"experimentId":null} means "not in an experiment".'
      )
  )
  .annotate(OpenApi.Title, "Experiments") {}

/** The product-client machine API: experiments, analytics collectors, public blog, health (under /api). */
export class ProductApi extends HttpApi.make("product")
  .add(HealthApi)
  .add(ExperimentsApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel product-client API")
  .annotate(OpenApi.Description, "Sticky experiment assignment, analytics collectors, public blog, onboarding.") {}
