import { Schema } from "effect"

/** What an ingest answers: per source, what was indexed, skipped and dropped. */

export const SourceIngest = Schema.Struct({
  repo: Schema.String,
  commit: Schema.NullOr(Schema.String),
  previous_commit: Schema.NullOr(Schema.String),
  files_indexed: Schema.Int,
  files_deleted: Schema.Int,
  files_skipped: Schema.Int,
  skipped: Schema.Struct({ binary: Schema.Int, too_large: Schema.Int, symlink: Schema.Int, not_a_file: Schema.Int }),
  chunks: Schema.Int,
  /** Chunks given a new vector by the embedder (0 without one); unchanged chunks keep theirs. */
  vectors_computed: Schema.Int,
  /** Set when the embedder failed: the chunks are indexed and searchable lexically, their vectors wait. */
  embedding_error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Int,
  error: Schema.NullOr(Schema.String)
})

export type SourceIngest = typeof SourceIngest.Type

export class IngestResult extends Schema.Class<IngestResult>("IngestResult")({
  registry_commit: Schema.NullOr(Schema.String),
  registry_refused: Schema.NullOr(Schema.String),
  sources: Schema.Array(SourceIngest),
  /** Sources whose index was dropped by this ingest: removed from the registry, or disabled there. */
  sources_removed: Schema.Array(Schema.String)
}) {}
