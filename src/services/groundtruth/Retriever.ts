import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { stripCredentials } from "../platform/GitMirror.js"
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
  readonly id: number
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

    /**
     * Candidates first (ids and bm25 only: ranking every match is the unavoidable part), then the
     * chunk rows of the best few, then snippets only for those: snippet() is the costly function.
     */
    const run = (match: string, repos: ReadonlyArray<string> | undefined, limit: number) =>
      Effect.gen(function* () {
        const candidates = yield* repos === undefined
          ? sql<{ id: number; rank: number }>`
              SELECT rowid AS id, bm25(gt_chunks_fts, 2.0, 1.0) AS rank FROM gt_chunks_fts
              WHERE gt_chunks_fts MATCH ${match} ORDER BY rank LIMIT ${limit * 3}`
          : sql<{ id: number; rank: number }>`
              SELECT gt_chunks_fts.rowid AS id, bm25(gt_chunks_fts, 2.0, 1.0) AS rank
              FROM gt_chunks_fts JOIN gt_chunks c ON c.id = gt_chunks_fts.rowid
              WHERE gt_chunks_fts MATCH ${match} AND ${sql.in("c.repo", [...repos])}
              ORDER BY rank LIMIT ${limit * 3}`
        if (candidates.length === 0) return [] as Array<HitRow>
        const rankOf = new Map(candidates.map((c) => [Number(c.id), Number(c.rank)]))
        const rows = yield* sql<Omit<HitRow, "rank" | "snippet"> & { id: number }>`
          SELECT id, repo, path, commit_sha, line, end_line, heading, content FROM gt_chunks
          WHERE ${sql.in("id", [...rankOf.keys()])}`
        return rows.map((row) => ({ ...row, rank: rankOf.get(Number(row.id)) ?? 0, snippet: "" }))
      })

    const snippets = (match: string, ids: ReadonlyArray<number>) =>
      ids.length === 0
        ? Effect.succeed(new Map<number, string>())
        : Effect.map(
            sql<{ id: number; snippet: string }>`
              SELECT rowid AS id, snippet(gt_chunks_fts, 1, '', '', '…', 24) AS snippet FROM gt_chunks_fts
              WHERE gt_chunks_fts MATCH ${match} AND ${sql.in("rowid", [...ids])}`,
            (rows) => new Map(rows.map((r) => [Number(r.id), r.snippet]))
          )

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
      let matched: string | undefined
      for (const mode of ["all", "any"] as const) {
        const match = ftsQuery(query, mode)
        if (match === undefined) break
        rows = yield* run(match, options.repos, limit).pipe(Effect.orDie)
        matched = match
        if (rows.length > 0) break
      }
      const ranked = rows
        .map((row): SearchHit & { readonly content: string; readonly id: number } => {
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
            content: row.content,
            id: Number(row.id)
          }
        })
        .sort(
          (a, b) => b.score - a.score || a.repo.localeCompare(b.repo) || a.path.localeCompare(b.path) || a.line - b.line
        )
        .slice(0, limit)
      const snippetOf =
        matched === undefined
          ? new Map<number, string>()
          : yield* snippets(
              matched,
              ranked.map((hit) => hit.id)
            ).pipe(Effect.orDie)
      return ranked.map(({ id, ...hit }) => ({ ...hit, snippet: snippetOf.get(id) ?? hit.snippet }))
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
