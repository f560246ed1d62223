import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Schema } from "effect"
import { HealthApi } from "../shared/Health.js"
import { problemOpenApi } from "../shared/ProblemContract.js"
import { IntegerFromString, RequestStruct } from "../shared/RequestSchema.js"
import { CodePointText } from "../shared/Text.js"
import { CollectBatch, CollectResult, MalformedBatch, SiteNotAllowed } from "./Analytics.js"
import { AppNotFound, Assignment, InvalidClientKey } from "./Assignment.js"
import { BlogList, BlogPost, PostNotFound } from "./Blog.js"
import { OnboardingBundle, OnboardingEvents, OnboardingEventsResult } from "./Onboarding.js"
import {
  AdminUnauthorized,
  AnalyticsSummary,
  ExperimentNotFound,
  ExperimentResults,
  ReadoutQueryInvalid
} from "./Readout.js"

/** 1 to 256 characters, counted as Unicode code points (an emoji is one, as chat counts them). */
const Param = CodePointText(256)

const CLIENT_KEY_DESCRIPTION =
  "A publishable client key of the app (from the journey registry). Required: missing or not the app's, the answer " +
  "is 401 INVALID_CLIENT_KEY."

/**
 * Decoded as optional so that a missing key is the route's own 401 INVALID_CLIENT_KEY (as a wrong one is), never a
 * 400 from header decoding; published as required (`requireClientKey`), which is what a client must send.
 */
export const ClientKeyHeader = Schema.Struct({
  "x-client-key": Schema.optional(Schema.String).annotations({ description: CLIENT_KEY_DESCRIPTION })
})

/** The OpenAPI operation with its `x-client-key` header parameter required (see ClientKeyHeader). */
const requireClientKey = (operation: Record<string, unknown>) => ({
  ...operation,
  parameters: ((operation.parameters as ReadonlyArray<Record<string, unknown>> | undefined) ?? []).map((parameter) =>
    parameter.in === "header" && parameter.name === "x-client-key"
      ? { ...parameter, required: true, description: CLIENT_KEY_DESCRIPTION }
      : parameter
  )
})

/** The readout's admin token (KEEL_ADMIN_TOKENS) as `Authorization: Bearer <token>`. */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("product/AdminAuth", {
  failure: AdminUnauthorized,
  security: {
    adminToken: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "An admin token, one of KEEL_ADMIN_TOKENS")
    )
  }
}) {}

const DateParam = Schema.String.annotations({
  description: "ISO 8601 date (UTC; as `to`, the end of that day) or date-time with a zone"
})
const readoutDates = { from: Schema.optional(DateParam), to: Schema.optional(DateParam) }
const experimentIdParam = HttpApiSchema.param("id", Param)

export class ExperimentsApi extends HttpApiGroup.make("experiments")
  .add(
    HttpApiEndpoint.get("assign", "/experiments/assign")
      .setUrlParams(RequestStruct({ app_id: Param, platform: Param, surface: Param, subject: Param }))
      .setHeaders(ClientKeyHeader)
      .addSuccess(Assignment)
      .addError(InvalidClientKey)
      .addError(AppNotFound)
      .annotate(
        OpenApi.Description,
        "Sticky assignment of a subject to the experiment of a journey. The empty assignment " +
          '{"variant":null,"config":{},"experimentId":null} means "not in an experiment".'
      )
      .annotate(OpenApi.Transform, requireClientKey)
  )
  .add(
    HttpApiEndpoint.get("results")`/experiments/${experimentIdParam}/results`
      .setUrlParams(
        RequestStruct({
          metric: Param.annotations({ description: "the analytics event name that counts as a conversion" }),
          ...readoutDates
        })
      )
      .addSuccess(ExperimentResults)
      .addError(ExperimentNotFound)
      .addError(ReadoutQueryInvalid)
      .middleware(AdminAuth)
      .annotate(
        OpenApi.Description,
        "Per variant: exposures, unique subjects first exposed in [from, to), conversions (a metric event at or " +
          "after first exposure), conversion rate with a 95 % Wilson interval, lift vs control with a two-sided " +
          "pooled two-proportion z-test, the Bayesian probability to beat control (Beta(1,1) priors, exact), and a " +
          "sample-ratio-mismatch chi-square test against the configured weights. Admin token required. " +
          "Formulas: docs/analytics.md."
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
  .add(
    HttpApiEndpoint.get("summary", "/analytics/summary")
      .setUrlParams(
        RequestStruct({
          site: Param,
          ...readoutDates,
          interval: Schema.optional(Schema.String.annotations({ description: "day (default) or hour" })),
          limit: Schema.optional(
            IntegerFromString.annotations({ description: "rows of each top list, 1..100 (default 10)" })
          )
        })
      )
      .addSuccess(AnalyticsSummary)
      .addError(ReadoutQueryInvalid)
      .middleware(AdminAuth)
      .annotate(
        OpenApi.Description,
        "A site's visitors (unique visitor ids), pageviews and events over [from, to) (default: the last 30 days), " +
          "per UTC day or hour, with its top pages, referrers and UTM sources. Admin token required."
      )
  )
  .annotate(OpenApi.Title, "Analytics collectors") {}

/** A revalidated answer: `304` with the same `ETag`, no body — published, since the route answers it itself. */
const notModified = (operation: Record<string, unknown>) => ({
  ...operation,
  responses: {
    ...(operation.responses as Record<string, unknown> | undefined),
    "304": {
      description: "Not Modified: the If-None-Match ETag is current (same ETag and Cache-Control, no body)"
    }
  }
})

export class OnboardingApi extends HttpApiGroup.make("onboarding")
  .add(
    HttpApiEndpoint.get("bundle", "/onboarding/bundle")
      .setUrlParams(RequestStruct({ app_id: Param, platform: Param, subject: Param }))
      .setHeaders(
        Schema.Struct({
          "x-client-key": Schema.optional(Schema.String),
          "if-none-match": Schema.optional(Schema.String)
        })
      )
      .addSuccess(OnboardingBundle)
      .addError(InvalidClientKey)
      .addError(AppNotFound)
      .annotate(
        OpenApi.Description,
        "Every journey's assignment for the app and platform, each as /experiments/assign answers it. " +
          "Carries a weak ETag over the assignments; If-None-Match with it answers 304."
      )
      .annotate(OpenApi.Transform, (operation) => requireClientKey(notModified(operation)))
  )
  .add(
    HttpApiEndpoint.post("events", "/onboarding/events")
      .setPayload(OnboardingEvents)
      .setHeaders(ClientKeyHeader)
      .addSuccess(OnboardingEventsResult, { status: 202 })
      .addError(InvalidClientKey)
      .addError(AppNotFound)
      .annotate(OpenApi.Transform, requireClientKey)
  )
  .annotate(OpenApi.Title, "Onboarding") {}

/** Any text: a slug or surface no post has (whatever its shape) is the same 404 POST_NOT_FOUND (docs/blog.md). */
const SlugParam = Schema.String
const surfaceParam = HttpApiSchema.param("surface", SlugParam)
const slugParam = HttpApiSchema.param("slug", SlugParam)
const CacheHeaders = Schema.Struct({ "if-none-match": Schema.optional(Schema.String) })

export class BlogApi extends HttpApiGroup.make("blog")
  .add(
    HttpApiEndpoint.get("list")`/public/blog/${surfaceParam}`
      .setUrlParams(
        RequestStruct({
          page: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(1))),
          limit: Schema.optional(IntegerFromString.pipe(Schema.int()))
        })
      )
      .setHeaders(CacheHeaders)
      .addSuccess(BlogList)
      .addError(PostNotFound)
      .annotate(
        OpenApi.Description,
        "Published posts of a surface, newest first (slug breaks ties); limit defaults to 15 and is clamped to 1..50. " +
          "Unauthenticated; weak ETag with If-None-Match → 304; Cache-Control: public, max-age=60."
      )
      .annotate(OpenApi.Transform, notModified)
  )
  .add(
    HttpApiEndpoint.get("post")`/public/blog/${surfaceParam}/${slugParam}`
      .setHeaders(CacheHeaders)
      .addSuccess(BlogPost)
      .addError(PostNotFound)
      .annotate(
        OpenApi.Description,
        "One published post with its HTML. Drafts, scheduled and unknown posts are all 404."
      )
      .annotate(OpenApi.Transform, notModified)
  )
  .annotate(OpenApi.Title, "Public blog") {}

/** The product-client machine API: experiments, analytics collectors, public blog, health (under /api). */
export class ProductApi extends HttpApi.make("product")
  .add(HealthApi)
  .add(ExperimentsApi)
  .add(AnalyticsApi)
  .add(OnboardingApi)
  .add(BlogApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel product-client API")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Sticky experiment assignment, analytics collectors, public blog, onboarding.") {}
