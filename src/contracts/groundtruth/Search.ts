import { Schema } from "effect"

/** `/repos` and `/search` on the wire: the sources, a search's bounds, hits and result. */

/** A search's bounds, one pair for every front door (`GET /search`, `ctl gt search`): refused past them, never clamped. */
export const SEARCH_QUERY_MAX_CHARS = 1000

export const SEARCH_LIMIT_MAX = 50

export const SearchHit = Schema.Struct({
  repo: Schema.String,
  path: Schema.String,
  commit: Schema.String,
  line: Schema.Int,
  end_line: Schema.Int,
  trust: Schema.String,
  score: Schema.Number,
  heading: Schema.String,
  snippet: Schema.String
})

export type SearchHit = typeof SearchHit.Type

export class SearchResult extends Schema.Class<SearchResult>("SearchResult")({
  query: Schema.String,
  hits: Schema.Array(SearchHit)
}) {}

export const RepoRecord = Schema.Struct({
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  url: Schema.String,
  branch: Schema.NullOr(Schema.String),
  owners: Schema.Array(Schema.String),
  trust: Schema.String,
  kind: Schema.String,
  enabled: Schema.Boolean,
  indexed_commit: Schema.NullOr(Schema.String),
  indexed_at: Schema.NullOr(Schema.String),
  chunks: Schema.Int
})
