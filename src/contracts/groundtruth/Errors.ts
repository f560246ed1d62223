import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The ground-truth surface's typed errors: the HTTP answers and `ctl gt` refusals share them. */

export class UnknownRepo extends Schema.TaggedError<UnknownRepo>()(
  "UnknownRepo",
  { repo: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

const FieldProblem = Schema.Struct({ path: Schema.String, message: Schema.String })

/** The registry has never validated: there is no good one to keep serving, so the ingest is refused. */
export class SourceRegistryRefused extends Schema.TaggedError<SourceRegistryRefused>()(
  "SourceRegistryRefused",
  {
    code: Schema.Literal("REGISTRY_REFUSED"),
    detail: Schema.String,
    /** Each problem of sources.yml: `path` into the document (`sources.0.trust`), `message`. */
    fields: Schema.Array(FieldProblem)
  },
  HttpApiSchema.annotations({ status: 422 })
) {}

/**
 * The registry could not be fetched and none was ever accepted: nothing to ingest from, try again later. The HTTP
 * answer: git's reason (the server's paths and hosts) stays in the server log.
 */
export class SourceRegistryUnavailable extends Schema.TaggedError<SourceRegistryUnavailable>()(
  "SourceRegistryUnavailable",
  { code: Schema.Literal("REGISTRY_UNAVAILABLE"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/**
 * No registry is configured: GT_REGISTRY_REPO is unset and the default local one (created by the demo data)
 * does not exist. An ingest has nothing to read, and says how to give it something rather than answer nothing.
 */
export class SourceRegistryNotConfigured extends Schema.TaggedError<SourceRegistryNotConfigured>()(
  "SourceRegistryNotConfigured",
  { code: Schema.Literal("REGISTRY_NOT_CONFIGURED"), detail: Schema.String },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** The source named is in the registry with `enabled: false` (a transcript unless enabled): never ingested. */
export class SourceDisabled extends Schema.TaggedError<SourceDisabled>()(
  "SourceDisabled",
  { code: Schema.Literal("SOURCE_DISABLED"), repo: Schema.String, detail: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** The `ref` asked for names no commit of the source. */
export class UnknownRef extends Schema.TaggedError<UnknownRef>()(
  "UnknownRef",
  { code: Schema.Literal("UNKNOWN_REF"), detail: Schema.String, repo: Schema.String, path: Schema.Literal("ref") },
  HttpApiSchema.annotations({ status: 422 })
) {}

export class AssetNotFound extends Schema.TaggedError<AssetNotFound>()(
  "AssetNotFound",
  { detail: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}
