import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { stripCredentials } from "./GitMirror.js"
import { GtConfig } from "./GtConfig.js"
import { UnknownRepo } from "./Ingester.js"
import { Sources } from "./Sources.js"

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

/**
 * User text to an FTS5 query that cannot be a syntax error: words only (letters and digits of any
 * script), each quoted, so operators (NEAR, AND, -, *, parentheses, quotes) are just text.
 */
export const ftsQuery = (text: string, mode: "all" | "any") => {
  const words = (text.normalize("NFKC").match(/[\p{L}\p{N}_]+/gu) ?? []).slice(0, 32)
  return words.length === 0 ? undefined : words.map((w) => `"${w}"`).join(mode === "all" ? " " : " OR ")
}

interface HitRow {
  readonly repo: string
  readonly path: string
  readonly commit_sha: string
  readonly line: number
  readonly end_line: number
  readonly heading: string
  readonly rank: number
  readonly snippet: string
  readonly content: string
}

/** Cited search over the index: FTS5 bm25 (headings weigh double), scaled by the source's trust tier. */
export class Retriever extends Effect.Service<Retriever>()("groundtruth/Retriever", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* GtConfig
    const sources = yield* Sources

    const run = (match: string, repos: ReadonlyArray<string> | undefined, limit: number) =>
      sql<HitRow>`
        SELECT c.repo, c.path, c.commit_sha, c.line, c.end_line, c.heading,
          bm25(gt_chunks_fts, 2.0, 1.0) AS rank,
          snippet(gt_chunks_fts, 1, '', '', '…', 24) AS snippet, c.content
        FROM gt_chunks_fts JOIN gt_chunks c ON c.id = gt_chunks_fts.rowid
        WHERE gt_chunks_fts MATCH ${match} ${repos === undefined ? sql`` : sql`AND ${sql.in("c.repo", [...repos])}`}
        ORDER BY rank LIMIT ${limit * 4}`

    const retrieve = Effect.fn("Retriever.retrieve")(function* (
      query: string,
      options: { readonly repos?: ReadonlyArray<string> | undefined; readonly limit?: number | undefined } = {}
    ) {
      const registry = yield* sources.current
      const trustOf = new Map(registry.sources.map((s) => [s.name, s.trust]))
      for (const repo of options.repos ?? []) {
        if (!trustOf.has(repo)) return yield* new UnknownRepo({ repo, detail: `no source named ${repo}` })
      }
      const limit = Math.min(50, Math.max(1, options.limit ?? 10))
      let rows: ReadonlyArray<HitRow> = []
      for (const mode of ["all", "any"] as const) {
        const match = ftsQuery(query, mode)
        if (match === undefined) break
        rows = yield* run(match, options.repos, limit).pipe(Effect.orDie)
        if (rows.length > 0) break
      }
      return rows
        .map((row): SearchHit & { readonly content: string } => {
          const trust = trustOf.get(row.repo) ?? "reference"
          const weight = config.trustWeights.get(trust) ?? 0.5
          return {
            repo: row.repo,
            path: row.path,
            commit: row.commit_sha,
            line: Number(row.line),
            end_line: Number(row.end_line),
            trust,
            score: Math.round(-Number(row.rank) * weight * 1000) / 1000,
            heading: row.heading,
            snippet: row.snippet,
            content: row.content
          }
        })
        .sort(
          (a, b) => b.score - a.score || a.repo.localeCompare(b.repo) || a.path.localeCompare(b.path) || a.line - b.line
        )
        .slice(0, limit)
    })

    const search = (
      query: string,
      options: { readonly repos?: ReadonlyArray<string> | undefined; readonly limit?: number | undefined } = {}
    ) =>
      Effect.map(
        retrieve(query, options),
        (hits) => new SearchResult({ query, hits: hits.map(({ content: _content, ...hit }) => hit) })
      )

    const repos = Effect.fn("Retriever.repos")(function* () {
      const registry = yield* sources.current
      const indexed = yield* sql<{ name: string; indexed_commit: string; indexed_at: number; chunks: number }>`
        SELECT name, indexed_commit, indexed_at, chunks FROM gt_sources`.pipe(Effect.orDie)
      const byName = new Map(indexed.map((r) => [r.name, r]))
      return registry.sources.map((source) => {
        const row = byName.get(source.name)
        return {
          name: source.name,
          url: stripCredentials(source.url),
          branch: source.branch ?? null,
          owners: source.owners,
          trust: source.trust,
          kind: source.kind,
          enabled: source.enabled,
          indexed_commit: row?.indexed_commit ?? null,
          indexed_at: row === undefined ? null : new Date(Number(row.indexed_at)).toISOString(),
          chunks: Number(row?.chunks ?? 0)
        }
      })
    })

    return { search, retrieve, repos } as const
  })
}) {}
