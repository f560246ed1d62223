import type { SqlError } from "@effect/sql"
import { Context, type Effect } from "effect"

/**
 * The question's words as both engines search them: letters and digits of any script (NFKC), each word a
 * phrase of the tokens it holds, all of them required ("all") or any one ("any"). Never operator syntax, so
 * user text cannot be a query syntax error on either engine.
 */
export interface TextQuery {
  readonly words: ReadonlyArray<string>
  readonly mode: "all" | "any"
}

/** A chunk's searchable text: shown heading and content, and the hidden terms (config vocabulary, path words). */
export interface IndexedText {
  readonly id: number
  readonly heading: string
  readonly content: string
  readonly terms: string
}

/** At most this many words of a question are searched. */
const MAX_WORDS = 32

/** User text to a query (undefined: no searchable word); `isStop` drops stopwords and repeats. */
export const textQuery = (
  text: string,
  mode: "all" | "any",
  isStop?: (word: string) => boolean
): TextQuery | undefined => {
  const all = text.normalize("NFKC").match(/[\p{L}\p{N}_]+/gu) ?? []
  const kept = isStop === undefined ? all : [...new Set(all.map((w) => w.toLowerCase()))].filter((w) => !isStop(w))
  const words = kept.slice(0, MAX_WORDS)
  return words.length === 0 ? undefined : { words, mode }
}

/** The FTS5 MATCH text of a query: each word quoted, so operators (NEAR, AND, -, *, parentheses) are just text. */
export const ftsMatch = (query: TextQuery) => query.words.map((w) => `"${w}"`).join(query.mode === "all" ? " " : " OR ")

/**
 * Full-text search over the ground truth's chunks, one adapter per engine (chosen by the SqlClient's dialect):
 * FTS5 with bm25 on SQLite, a weighted `tsvector` with a BM25 computed in SQL on PostgreSQL (docs/groundtruth.md).
 */
export interface TextSearchShape {
  /** Makes freshly inserted chunks searchable (in the caller's transaction). */
  readonly index: (rows: ReadonlyArray<IndexedText>) => Effect.Effect<void, SqlError.SqlError>
  /** Forgets chunks about to be deleted (in the caller's transaction). */
  readonly remove: (ids: ReadonlyArray<number>) => Effect.Effect<void, SqlError.SqlError>
  /** The ids of the best `limit` matches, best first (headings weigh double), within `repos` when given. */
  readonly match: (
    query: TextQuery,
    repos: ReadonlyArray<string> | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<number>, SqlError.SqlError>
  /** A short excerpt of each chunk's content around the query's words (at most 24 tokens, '…' where cut). */
  readonly snippets: (
    query: TextQuery,
    ids: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyMap<number, string>, SqlError.SqlError>
}

export class TextSearch extends Context.Tag("groundtruth/TextSearch")<TextSearch, TextSearchShape>() {}
