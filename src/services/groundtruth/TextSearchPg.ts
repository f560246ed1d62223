import type { SqlClient } from "@effect/sql"
import { Effect, Ref } from "effect"
import type { TextQuery, TextSearchShape } from "./TextSearch.js"
import { snippetOf } from "./TextSnippet.js"

/**
 * The text search configuration of `gt_chunks.search` (migrations.pg.ts): Snowball's English (Porter) stemmer and
 * no stopword list, as FTS5's `porter unicode61` keeps every word; text is split into letters-and-digits runs first.
 */
export const SEARCH_CONFIG = "keel_search"

/** A word's tokens as unicode61 splits it (`_` separates), lower-case. */
const tokensOf = (word: string) =>
  word
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t !== "")

/**
 * The `to_tsquery` text of a query: a word of several tokens is a phrase (`<->`), as FTS5 reads a quoted word; the
 * tokens are letters and digits only, so nothing in them is tsquery syntax.
 */
export const tsQueryText = (query: TextQuery) =>
  query.words
    .map(tokensOf)
    .filter((tokens) => tokens.length > 0)
    .map((tokens) => (tokens.length === 1 ? tokens[0]! : `(${tokens.join(" <-> ")})`))
    .join(query.mode === "all" ? " & " : " | ")

const plainText = (query: TextQuery) => query.words.flatMap(tokensOf).join(" ")

/** FTS5's bm25 constants. */
const K1 = 1.2
const B = 0.75

interface CorpusStats {
  readonly key: string
  readonly documents: number
  readonly averageTokens: number
}

/**
 * PostgreSQL's full text: the weighted `tsvector` of each chunk (heading A, content B, hidden terms C), kept by the
 * row itself (a generated column: nothing to write or delete here). Matches are ranked by FTS5's bm25 computed in
 * SQL — per query stem idf = ln((N − n + 0.5)/(n + 0.5)) floored at 1e-6, a heading occurrence counting 2, length
 * normalized by token count against the average — so both engines hand the reranker the same candidates. A word of
 * several tokens (`max_body_size`) matches as a phrase but is scored as its tokens.
 */
export const pgTextSearch = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    // N and the average length change only when an ingest commits: recounted when gt_sources says so.
    const cached = yield* Ref.make<CorpusStats | undefined>(undefined)
    const corpusStats = Effect.gen(function* () {
      const [mark] = yield* sql<{ key: string }>`
        SELECT coalesce(sum(chunks), 0)::text || ':' || coalesce(max(indexed_at), 0)::text AS key FROM gt_sources`
      const known = yield* Ref.get(cached)
      if (known !== undefined && known.key === mark?.key) return known
      const [row] = yield* sql<{ documents: string | number; average: string | number | null }>`
        SELECT count(*) AS documents, avg(tokens) AS average
        FROM (SELECT (SELECT sum(cardinality(u.positions)) FROM unnest(search) u) AS tokens FROM gt_chunks) d`
      const stats = {
        key: mark?.key ?? "",
        documents: Number(row?.documents ?? 0),
        averageTokens: Number(row?.average ?? 0)
      }
      yield* Ref.set(cached, stats)
      return stats
    })

    const match: TextSearchShape["match"] = (query, repos, limit) =>
      Effect.gen(function* () {
        const text = tsQueryText(query)
        const stats = yield* corpusStats
        if (text === "" || stats.documents === 0 || stats.averageTokens <= 0) return []
        // idf is MATERIALIZED: inlined into the per-row ORDER BY, its counts would run once per candidate.
        const inRepos = repos === undefined ? sql`TRUE` : sql.in("c.repo", [...repos])
        const rows = yield* sql<{ id: number | string }>`
          WITH stems AS (
            SELECT DISTINCT unnest(tsvector_to_array(to_tsvector(${SEARCH_CONFIG}::regconfig, ${plainText(query)}))) AS lexeme
          ), idf AS MATERIALIZED (
            SELECT s.lexeme, greatest(ln((${stats.documents}::float8 - h.n + 0.5) / (h.n + 0.5)), 1e-6) AS idf
            FROM stems s CROSS JOIN LATERAL (
              SELECT count(*)::float8 AS n FROM gt_chunks WHERE search @@ quote_literal(s.lexeme)::tsquery) h
          )
          SELECT c.id FROM gt_chunks c
          WHERE c.search @@ to_tsquery(${SEARCH_CONFIG}::regconfig, ${text}) AND ${inRepos}
          ORDER BY (
            SELECT coalesce(sum(i.idf * f.f * ${K1 + 1}::float8 / (f.f + ${K1}::float8 * (${1 - B}::float8 + ${B}::float8 * d.tokens / ${stats.averageTokens}::float8))), 0)
            FROM (SELECT sum(cardinality(u.positions)) AS tokens FROM unnest(c.search) u) d,
              (SELECT u.lexeme, (SELECT sum(CASE w WHEN 'A' THEN 2 ELSE 1 END) FROM unnest(u.weights) w) AS f
               FROM unnest(c.search) u WHERE u.lexeme IN (SELECT lexeme FROM idf)) f
              JOIN idf i ON i.lexeme = f.lexeme
          ) DESC, c.id
          LIMIT ${limit}`
        return rows.map((r) => Number(r.id))
      })

    const snippets: TextSearchShape["snippets"] = (query, ids) =>
      ids.length === 0
        ? Effect.succeed(new Map<number, string>())
        : Effect.map(
            sql<{ id: number | string; content: string; hits: ReadonlyArray<[string, number]> | null }>`
              SELECT c.id, c.content, (
                SELECT json_agg(json_build_array(u.lexeme, p - 1))
                FROM unnest(to_tsvector(${SEARCH_CONFIG}::regconfig, regexp_replace(c.content, '[^[:alnum:]]+', ' ', 'g'))) u
                  CROSS JOIN unnest(u.positions) p
                WHERE u.lexeme = ANY (tsvector_to_array(to_tsvector(${SEARCH_CONFIG}::regconfig, ${plainText(query)})))
              ) AS hits
              FROM gt_chunks c WHERE ${sql.in("c.id", [...ids])}`,
            (rows) =>
              new Map(
                rows.map((r) => [
                  Number(r.id),
                  snippetOf(
                    r.content,
                    (r.hits ?? []).map(([word, at]) => ({ word, at })).sort((a, b) => a.at - b.at)
                  )
                ])
              )
          )

    return {
      // The search document is a generated column of the chunk's row: it follows every insert and delete.
      index: () => Effect.void,
      remove: () => Effect.void,
      match,
      snippets
    } satisfies TextSearchShape
  })
