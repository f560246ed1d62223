import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { AdminAuth, ProductApi } from "../../contracts/product/Api.js"
import { BlogList, BlogPost } from "../../contracts/product/Blog.js"
import { OnboardingBundle } from "../../contracts/product/Onboarding.js"
import { etagMatches, weakEtag } from "../../services/platform/Etag.js"
import { Health } from "../../services/platform/Health.js"
import { AdminTokens } from "../../services/product/AdminTokens.js"
import { Assigner } from "../../services/product/Assigner.js"
import { Blog, DEFAULT_LIMIT } from "../../services/product/Blog.js"
import { Collector, type CollectorKind } from "../../services/product/Collector.js"
import { Onboarding } from "../../services/product/Onboarding.js"
import { Readout } from "../../services/product/Readout.js"

export const ProductHealthLive = HttpApiBuilder.group(ProductApi, "health", (handlers) =>
  handlers.handle("health", () => Health.use((health) => health.check))
)

/**
 * The readout's admin check. The header is read as sent (the Bearer scheme in any case, as everywhere);
 * the platform's decoded credential is not used.
 */
export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.map(AdminTokens, (tokens) =>
    AdminAuth.of({
      adminToken: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          tokens.authorize(request.headers.authorization)
        )
    })
  )
)

export const ExperimentsLive = HttpApiBuilder.group(ProductApi, "experiments", (handlers) =>
  handlers
    .handle("assign", ({ headers, urlParams }) =>
      Assigner.use((assigner) =>
        assigner.assign({
          appId: urlParams.app_id,
          platform: urlParams.platform,
          surface: urlParams.surface,
          subject: urlParams.subject,
          clientKey: headers["x-client-key"]
        })
      )
    )
    .handle("results", ({ path, urlParams }) =>
      Readout.use((readout) =>
        readout.experimentResults({
          experimentId: path.id,
          metric: urlParams.metric,
          from: urlParams.from,
          to: urlParams.to
        })
      )
    )
).pipe(Layer.provide(AdminAuthLive))

/** The collectors read the raw body themselves: beacons send JSON as text/plain. */
const collectRaw = (kind: CollectorKind) => (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const body = yield* Effect.orDie(request.text)
    const result = yield* Collector.use((collector) => collector.collect(kind, body))
    return yield* HttpServerResponse.json(result, { status: 202 }).pipe(Effect.orDie)
  })

export const AnalyticsLive = HttpApiBuilder.group(ProductApi, "analytics", (handlers) =>
  handlers
    .handleRaw("web", ({ request }) => collectRaw("web")(request))
    .handleRaw("mobile", ({ request }) => collectRaw("mobile")(request))
    .handle("summary", ({ urlParams }) =>
      Readout.use((readout) =>
        readout.analyticsSummary({
          site: urlParams.site,
          from: urlParams.from,
          to: urlParams.to,
          interval: urlParams.interval,
          limit: urlParams.limit
        })
      )
    )
).pipe(Layer.provide(AdminAuthLive))

export const OnboardingLive = HttpApiBuilder.group(ProductApi, "onboarding", (handlers) =>
  handlers
    .handle("bundle", ({ headers, urlParams }) =>
      Effect.gen(function* () {
        const onboarding = yield* Onboarding
        const { bundle, etag } = yield* onboarding.bundle(
          urlParams.app_id,
          urlParams.platform,
          urlParams.subject,
          headers["x-client-key"]
        )
        // A 304 carries the headers the 200 would (RFC 9110 §15.4.5): the validator and the caching rule.
        const cacheHeaders = { etag, "cache-control": "private, no-cache" }
        if (etagMatches(headers["if-none-match"], etag))
          return HttpServerResponse.empty({ status: 304, headers: cacheHeaders })
        const encoded = yield* Schema.encode(OnboardingBundle)(bundle).pipe(Effect.orDie)
        return yield* HttpServerResponse.json(encoded, { headers: cacheHeaders }).pipe(Effect.orDie)
      })
    )
    .handle("events", ({ headers, payload }) =>
      Onboarding.use((onboarding) => onboarding.record(payload, headers["x-client-key"]))
    )
)

/** Answers with a weak ETag over the encoded body, or 304 when the client already has it. */
const cacheable = <A, I>(schema: Schema.Schema<A, I>, value: A, ifNoneMatch: string | undefined) =>
  Effect.gen(function* () {
    const encoded = yield* Schema.encode(schema)(value).pipe(Effect.orDie)
    const body = JSON.stringify(encoded)
    const etag = weakEtag(body)
    const headers = { etag, "cache-control": "public, max-age=60", vary: "accept-encoding" }
    if (etagMatches(ifNoneMatch, etag)) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    return HttpServerResponse.text(body, { contentType: "application/json", headers })
  })

export const BlogLive = HttpApiBuilder.group(ProductApi, "blog", (handlers) =>
  handlers
    .handle("list", ({ headers, path, urlParams }) =>
      Effect.gen(function* () {
        const blog = yield* Blog
        const list = yield* blog.list(path.surface, urlParams.page ?? 1, urlParams.limit ?? DEFAULT_LIMIT)
        return yield* cacheable(BlogList, list, headers["if-none-match"])
      })
    )
    .handle("post", ({ headers, path }) =>
      Effect.gen(function* () {
        const blog = yield* Blog
        const post = yield* blog.get(path.surface, path.slug)
        return yield* cacheable(BlogPost, post, headers["if-none-match"])
      })
    )
)
