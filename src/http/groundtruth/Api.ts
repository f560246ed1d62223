import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { IngestResult, UnknownRepo } from "../../services/groundtruth/Ingester.js"
import { RepoRecord, SearchResult } from "../../services/groundtruth/Retriever.js"
import { HealthApi } from "../Health.js"

export class GtUnauthorized extends Schema.TaggedError<GtUnauthorized>()(
  "GtUnauthorized",
  { code: Schema.Literal("UNAUTHORIZED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** Bearer token from GT_TOKENS; with none configured, loopback clients only. */
export class GroundTruthAuth extends HttpApiMiddleware.Tag<GroundTruthAuth>()("GroundTruthAuth", {
  failure: GtUnauthorized
}) {}

export class GroundTruthReadApi extends HttpApiGroup.make("read")
  .add(HttpApiEndpoint.get("repos", "/repos").addSuccess(Schema.Array(RepoRecord)))
  .add(
    HttpApiEndpoint.get("search", "/search")
      .setUrlParams(
        Schema.Struct({
          q: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1000)),
          repo: Schema.optional(Schema.String),
          limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 50)))
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
      .setPayload(Schema.Struct({ repo: Schema.optional(Schema.String), ref: Schema.optional(Schema.String) }))
      .addSuccess(IngestResult)
      .addError(UnknownRepo)
      .annotate(
        OpenApi.Description,
        "Ingests the named source (all enabled sources without repo) at ref (its branch without ref). Per source: " +
          "{repo, commit, previous_commit, files_indexed, files_skipped, chunks, duration_ms, error}."
      )
  )
  .middleware(GroundTruthAuth)
  .annotate(OpenApi.Title, "Ingestion") {}

/** The ground-truth surface: private Q&A over ingested repositories (paths without prefix). */
export class GroundTruthApi extends HttpApi.make("groundtruth")
  .add(HealthApi)
  .add(GroundTruthReadApi)
  .add(GroundTruthIngestApi)
  .annotate(OpenApi.Title, "Keel ground truth")
  .annotate(OpenApi.Description, "Ingest git repositories; search and ask with line-exact citations; brand assets.") {}
