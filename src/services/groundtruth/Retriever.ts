import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type SearchHit, SearchResult } from "../../contracts/groundtruth/Search.js"
import { displayUrl } from "../platform/GitMirror.js"
import { Embedder } from "./Embedder.js"
import { GtConfig } from "./GtConfig.js"
import { unknownRepo } from "./Ingester.js"
import { features, idf, type QueryProfile, reciprocalRankFusion, rerankScore } from "./Ranking.js"
import { Sources } from "./Sources.js"
import { isStopword, stemSequence, words } from "./Terms.js"
import { ftsMatch, type TextQuery, TextSearch, textQuery } from "./TextSearch.js"
import { makeVectorIndex } from "./VectorIndex.js"

/** User text to an FTS5 query that cannot be a syntax error (TextSearch.ts's textQuery and ftsMatch). */
export const ftsQuery = (text: string, mode: "all" | "any", isStop?: (word: string) => boolean) => {
  const query = textQuery(text, mode, isStop)
  return query === undefined ? undefined : ftsMatch(query)
}

/** Sources the question names: a source's name as a word of the question ("vite", "fastify"). */
export const namedSources = (question: string, names: ReadonlyArray<string>) => {
  const said = new Set(words(question))
  return new Set(names.filter((name) => said.has(name.toLowerCase())))
}

/** A ranked passage with what the answerer needs beside the citation. */
export interface RankedHit extends SearchHit {
  readonly content: string
  /** idf-weighted share of the question's stems the passage holds (0..1). */
  readonly support: number
  /** The best idf-weighted share within a few consecutive lines (Ranking.features' density). */
  readonly density: number
  /** The question's stems the passage holds. */
  readonly matched: ReadonlyArray<string>
  readonly id: number
}

interface ChunkRow {
  readonly id: number
  readonly repo: string
  readonly path: string
  readonly commit_sha: string
  readonly line: number
  readonly end_line: number
  readonly heading: string
  readonly content: string
  readonly terms: string
}

/** Candidates per lexical query and per dense search; the reranker sees the fused best RERANK_DEPTH. */
const LEXICAL_DEPTH = 60
const DENSE_DEPTH = 60
const RERANK_DEPTH = 30

/**
 * Cited search over the index, hybrid: bm25 candidates (TextSearch.ts; headings weigh double) from an AND query
 * of the question's words and from a stopword-free OR query (again within the sources the question
 * names), and cosine neighbours from the embedder when one is configured, fused by reciprocal rank;
 * then the best RERANK_DEPTH are reranked on idf-weighted coverage, heading match, word adjacency, the
 * named source, and trust as a tie-break (never a multiplier).
 */
export class Retriever extends Effect.Service<Retriever>()("groundtruth/Retriever", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* GtConfig
    const sources = yield* Sources
    const textSearch = yield* TextSearch
    const embedder = yield* Embedder
    const vectors = yield* makeVectorIndex(sql, embedder, config)

    const lexical = (query: TextQuery, repos: ReadonlyArray<string> | undefined) =>
      textSearch.match(query, repos, LEXICAL_DEPTH)

    /** How many indexed passages hold each stem (absent = 0). */
    const frequencies = (list: ReadonlyArray<string>) =>
      list.length === 0
        ? Effect.succeed(new Map<string, number>())
        : Effect.map(
            sql<{ stem: string; df: number }>`SELECT stem, df FROM gt_terms WHERE ${sql.in("stem", [...list])}`,
            (rows) => new Map(rows.map((r) => [r.stem, Number(r.df)]))
          ).pipe(Effect.orDie)

    /** The question's stems with their idf over the whole index. */
    const profileOf = (query: string, named: ReadonlySet<string>) =>
      Effect.gen(function* () {
        const sequence = stemSequence(query)
        const distinct = [...new Set(sequence)]
        if (distinct.length === 0) return undefined
        const dfOf = yield* frequencies(distinct)
        const total = yield* sql<{ n: number }>`SELECT coalesce(sum(chunks), 0) AS n FROM gt_sources`
        const documents = Number(total[0]?.n ?? 0)
        const weights = new Map(distinct.map((s) => [s, idf(documents, dfOf.get(s) ?? 0)]))
        let sum = 0
        for (const w of weights.values()) sum += w
        return { weights, total: sum, sequence, named } satisfies QueryProfile
      })

    const retrieve = Effect.fn("Retriever.retrieve")(function* (
      query: string,
      options: { readonly repos?: ReadonlyArray<string> | undefined; readonly limit?: number | undefined } = {}
    ) {
      const registry = yield* sources.current
      const trustOf = new Map(registry.sources.map((s) => [s.name, s.trust]))
      for (const repo of options.repos ?? []) {
        if (!trustOf.has(repo)) return yield* unknownRepo(repo)
      }
      const limit = Math.min(50, Math.max(1, options.limit ?? 10))
      const scope = options.repos === undefined || options.repos.length === 0 ? undefined : options.repos
      const named = namedSources(
        query,
        registry.sources.map((s) => s.name).filter((name) => scope === undefined || scope.includes(name))
      )
      // Stopwords out: an AND of "how do I …" matches nothing, an OR of them matches everything.
      const all = textQuery(query, "all", isStopword) ?? textQuery(query, "all")
      const any = textQuery(query, "any", isStopword)
      if (all === undefined) return [] as Array<RankedHit>
      const lists: Array<{ ids: ReadonlyArray<number>; weight: number }> = []
      const conjunctive = yield* lexical(all, scope).pipe(Effect.orDie)
      lists.push({ ids: conjunctive, weight: 1 })
      // The OR query widens a narrow AND; when every word already matched enough passages, it adds noise and time.
      if (any !== undefined && ftsMatch(any) !== ftsMatch(all) && conjunctive.length < Math.max(RERANK_DEPTH, limit)) {
        lists.push({ ids: yield* lexical(any, scope).pipe(Effect.orDie), weight: 1 })
        if (named.size > 0 && (scope === undefined || named.size < scope.length)) {
          lists.push({ ids: yield* lexical(any, [...named]).pipe(Effect.orDie), weight: 0.5 })
        }
      }
      const dense = yield* vectors.nearest(query, scope, DENSE_DEPTH)
      if (dense.length > 0) lists.push({ ids: dense, weight: config.embeddings?.weight ?? 1 })
      // A limit above the rerank depth reranks that many: `limit` is how many hits come back when that many match.
      const fused = [...reciprocalRankFusion(lists)].sort((a, b) => b[1] - a[1]).slice(0, Math.max(RERANK_DEPTH, limit))
      if (fused.length === 0) return [] as Array<RankedHit>
      const best = fused[0]![1]
      const profile = yield* profileOf(query, named).pipe(Effect.orDie)
      const rows = yield* sql<ChunkRow>`
        SELECT id, repo, path, commit_sha, line, end_line, heading, content, terms FROM gt_chunks
        WHERE ${sql.in(
          "id",
          fused.map(([id]) => id)
        )}`.pipe(Effect.orDie)
      const fusionOf = new Map(fused)
      const ranked = rows
        .map((row) => {
          const trust = trustOf.get(row.repo) ?? "reference"
          const weight = config.trustWeights.get(trust) ?? 0.5
          const f =
            profile === undefined
              ? undefined
              : features(profile, row, (fusionOf.get(Number(row.id)) ?? 0) / best, weight)
          const score = f === undefined ? (fusionOf.get(Number(row.id)) ?? 0) / best : rerankScore(f)
          return {
            repo: row.repo,
            path: row.path,
            commit: row.commit_sha,
            line: Number(row.line),
            end_line: Number(row.end_line),
            trust,
            score: Math.round(score * 1000) / 1000,
            heading: row.heading,
            snippet: "",
            content: row.content,
            support: f?.coverage ?? 0,
            density: f?.density ?? 0,
            matched: f?.matched ?? [],
            id: Number(row.id),
            exact: score
          }
        })
        .sort(
          (a, b) => b.exact - a.exact || a.repo.localeCompare(b.repo) || a.path.localeCompare(b.path) || a.line - b.line
        )
        .slice(0, limit)
      const ids = ranked.map((hit) => hit.id)
      const snippetOf = yield* textSearch.snippets(any ?? all, ids).pipe(Effect.orDie)
      return ranked.map(({ exact: _exact, ...hit }): RankedHit => ({ ...hit, snippet: snippetOf.get(hit.id) ?? "" }))
    })

    const search = (
      query: string,
      options: { readonly repos?: ReadonlyArray<string> | undefined; readonly limit?: number | undefined } = {}
    ) =>
      Effect.map(
        retrieve(query, options),
        (hits) =>
          new SearchResult({
            query,
            hits: hits.map(
              ({ content: _content, support: _support, density: _density, matched: _matched, id: _id, ...hit }) => hit
            )
          })
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
          description: source.description,
          url: displayUrl(source.url),
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

    /** The question's distinct stems and their idf over the whole index (undefined: no searchable word). */
    const profile = (query: string) => profileOf(query, new Set()).pipe(Effect.orDie)

    return { search, retrieve, repos, frequencies, profile, denseStatus: vectors.status } as const
  })
}) {}
