import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AppNotFound, Assignment, InvalidClientKey } from "../../services/product/Assigner.js"
import { CollectBatch, CollectResult, MalformedBatch, SiteNotAllowed } from "../../services/product/Collector.js"
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

const collect = <const Kind extends "web" | "mobile">(kind: Kind) =>
  HttpApiEndpoint.post(kind, `/analytics/${kind}/collect`)
    // Documented here; decoded by the Collector from the raw body, which may be text/plain (sendBeacon).
    .setPayload(CollectBatch)
    .addSuccess(CollectResult, { status: 202 })
    .addError(MalformedBatch)
    .addError(SiteNotAllowed)
    .annotate(
      OpenApi.Description,
      `Stores ${kind} analytics events once per (site_id, event_id); at most 500 per batch. ` +
        "A malformed event is reported in `rejected` and the rest are stored. Over the body limit: 413."
    )

export class AnalyticsApi extends HttpApiGroup.make("analytics")
  .add(collect("web"))
  .add(collect("mobile"))
  .annotate(OpenApi.Title, "Analytics collectors") {}

/** The product-client machine API: experiments, analytics collectors, public blog, health (under /api). */
export class ProductApi extends HttpApi.make("product")
  .add(HealthApi)
  .add(ExperimentsApi)
  .add(AnalyticsApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel product-client API")
  .annotate(OpenApi.Description, "Sticky experiment assignment, analytics collectors, public blog, onboarding.") {}
