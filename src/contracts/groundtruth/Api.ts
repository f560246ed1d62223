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
import { IntegerFromString, RequestStruct, StrictRequestStruct } from "../shared/RequestSchema.js"
import { AskAnswer } from "./Ask.js"
import { AssetRecord } from "./Assets.js"
import {
  AssetNotFound,
  SourceDisabled,
  SourceRegistryNotConfigured,
  SourceRegistryRefused,
  SourceRegistryUnavailable,
  UnknownRef,
  UnknownRepo
} from "./Errors.js"
import { IngestResult } from "./Ingest.js"
import { RepoRecord, SEARCH_LIMIT_MAX, SEARCH_QUERY_MAX_CHARS, SearchResult } from "./Search.js"

export class GtUnauthorized extends Schema.TaggedError<GtUnauthorized>()(
  "GtUnauthorized",
  { code: Schema.Literal("UNAUTHORIZED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * Without GT_TOKENS, a loopback client asked for a `Host` that is not this machine's (DNS rebinding: a web page
 * whose own name resolves to 127.0.0.1). 421 Misdirected Request: this server does not answer for that name.
 */
export class GtHostNotAllowed extends Schema.TaggedError<GtHostNotAllowed>()(
  "GtHostNotAllowed",
  { code: Schema.Literal("HOST_NOT_ALLOWED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 421 })
) {}

/** Bearer token from GT_TOKENS; with none configured, loopback clients only, asking for a loopback `Host`. */
export class GroundTruthAuth extends HttpApiMiddleware.Tag<GroundTruthAuth>()("GroundTruthAuth", {
  failure: Schema.Union(GtUnauthorized, GtHostNotAllowed),
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "One of GT_TOKENS. With GT_TOKENS unset, no token: loopback clients only, naming a loopback Host " +
          "(localhost, 127.x.y.z, [::1]) or one of KEEL_SERVER_NAMES (docs/groundtruth.md)."
      )
    )
  }
}) {}

export class GroundTruthReadApi extends HttpApiGroup.make("read")
  .add(HttpApiEndpoint.get("repos", "/repos").addSuccess(Schema.Array(RepoRecord)))
  .add(
    HttpApiEndpoint.get("search", "/search")
      .setUrlParams(
        RequestStruct({
          q: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(SEARCH_QUERY_MAX_CHARS)),
          repo: Schema.optional(Schema.String),
          limit: Schema.optional(IntegerFromString.pipe(Schema.int(), Schema.between(1, SEARCH_LIMIT_MAX)))
        })
      )
      .addSuccess(SearchResult)
      .addError(UnknownRepo)
      .annotate(OpenApi.Description, "Chunks matching q, each with its citation {repo, path, commit, line, end_line}.")
  )
  .middleware(GroundTruthAuth)
  .annotate(OpenApi.Title, "Sources and search") {}

export class GroundTruthIngestApi extends HttpApiGroup.make("ingest")
  .add(
    HttpApiEndpoint.post("repo", "/ingest/repo")
      .setPayload(
        StrictRequestStruct({
          repo: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
          ref: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
        })
      )
      .addSuccess(IngestResult)
      .addError(UnknownRepo)
      .addError(UnknownRef)
      .addError(SourceRegistryRefused)
      .addError(SourceDisabled)
      .addError(SourceRegistryUnavailable)
      .addError(SourceRegistryNotConfigured)
      .annotate(
        OpenApi.Description,
        "Ingests the named source (all enabled sources without repo) at ref (its branch without ref), and drops the " +
          "index of every source no longer enabled in the registry (sources_removed). Per source: {repo, commit, " +
          "previous_commit, files_indexed, files_deleted, files_skipped, chunks, duration_ms, error}."
      )
  )
  .middleware(GroundTruthAuth)
  .annotate(OpenApi.Title, "Ingestion") {}

export class GroundTruthAskApi extends HttpApiGroup.make("ask")
  .add(
    HttpApiEndpoint.post("ask", "/ask")
      .setPayload(
        // Strict: a misspelt scope member ("repo", "scope.repo") would silently widen the question to every source.
        StrictRequestStruct({
          question: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2000)),
          k: Schema.optional(Schema.Int.pipe(Schema.between(1, 20))),
          scope: Schema.optionalWith(
            Schema.Struct({ repos: Schema.optional(Schema.Array(Schema.String).pipe(Schema.minItems(1))) }),
            { default: () => ({}) }
          )
        })
      )
      .addSuccess(AskAnswer)
      .addError(UnknownRepo)
      .annotate(
        OpenApi.Description,
        "An answer with up to k citations (default 5, at most 20). Without a configured language model: extractive " +
          "(the supporting passages). When the sources do not support the question: missing=true, the answer says so, " +
          "and the citations are the passages examined, each with supports=false (true on every citation of an answer)."
      )
  )
  .middleware(GroundTruthAuth)
  .annotate(OpenApi.Title, "Ask") {}

const productParam = HttpApiSchema.param("product", Schema.String)
const kindParam = HttpApiSchema.param("kind", Schema.String)
const indexParam = HttpApiSchema.param("assetIndex", IntegerFromString.pipe(Schema.int(), Schema.nonNegative()))

export class GroundTruthAssetsApi extends HttpApiGroup.make("assets")
  .add(
    HttpApiEndpoint.get("list", "/assets")
      .setUrlParams(
        RequestStruct({
          product: Schema.optional(Schema.String),
          kind: Schema.optional(Schema.String),
          q: Schema.optional(Schema.String)
        })
      )
      .addSuccess(Schema.Array(AssetRecord))
  )
  .add(HttpApiEndpoint.get("products", "/assets/products").addSuccess(Schema.Array(Schema.String)))
  .add(HttpApiEndpoint.get("kinds", "/assets/kinds").addSuccess(Schema.Array(Schema.String)))
  .add(
    HttpApiEndpoint.get("ofKind")`/assets/${productParam}/${kindParam}`
      .addSuccess(Schema.Array(AssetRecord))
      .addError(AssetNotFound)
  )
  .add(
    HttpApiEndpoint.get("content")`/assets/${productParam}/${kindParam}/${indexParam}/content`
      .addSuccess(HttpApiSchema.Uint8Array())
      .addError(AssetNotFound)
      .annotate(OpenApi.Description, "The exact bytes of a listed asset at its commit, with its Content-Type.")
  )
  .middleware(GroundTruthAuth)
  .annotate(OpenApi.Title, "Brand assets") {}

/** The ground-truth surface: private Q&A over ingested repositories (paths without prefix). */
export class GroundTruthApi extends HttpApi.make("groundtruth")
  .add(HealthApi)
  .add(GroundTruthReadApi)
  .add(GroundTruthIngestApi)
  .add(GroundTruthAskApi)
  .add(GroundTruthAssetsApi)
  .annotate(OpenApi.Title, "Keel ground truth")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Ingest git repositories; search and ask with line-exact citations; brand assets.") {}
