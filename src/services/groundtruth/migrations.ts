import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"
import { withPostgres } from "../platform/migrations/byDialect.js"
import { groundTruthPgMigrations } from "./migrations.pg.js"
import { stems } from "./Terms.js"

/** SQLite's migrations, as landed (never edited: add one). PostgreSQL's, id for id, are in migrations.pg.ts. */
const sqlite: DomainMigrations = {
  domain: "groundtruth",
  migrations: {
    "0001_create_index": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The last registry (sources.yml) that validated: it stays in force while a newer one is refused.
      yield* sql`CREATE TABLE gt_registry (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        commit_sha TEXT NOT NULL,
        text TEXT NOT NULL,
        loaded_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE gt_sources (
        name TEXT PRIMARY KEY,
        indexed_commit TEXT NOT NULL,
        indexed_at INTEGER NOT NULL,
        selection TEXT NOT NULL,
        chunks INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE gt_chunks (
        id INTEGER PRIMARY KEY,
        repo TEXT NOT NULL,
        path TEXT NOT NULL,
        commit_sha TEXT NOT NULL,
        line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        heading TEXT NOT NULL,
        content TEXT NOT NULL
      )`
      yield* sql`CREATE INDEX gt_chunks_by_file ON gt_chunks (repo, path)`
      yield* sql`CREATE VIRTUAL TABLE gt_chunks_fts USING fts5(heading, content, tokenize = 'porter unicode61')`
    }),
    /**
     * Hybrid ranking: hidden terms per chunk (config vocabulary, path words) in a third FTS column, the
     * document frequency of every stem (for idf-weighted coverage and abstention), a digest per chunk
     * and the embeddings stored by digest and model (an unchanged chunk never needs a new vector). The
     * existing chunks stay searchable; the next ingest re-chunks every source (the chunker changed).
     */
    "0002_hybrid_ranking": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE gt_chunks ADD COLUMN terms TEXT NOT NULL DEFAULT ''`
      yield* sql`ALTER TABLE gt_chunks ADD COLUMN digest TEXT NOT NULL DEFAULT ''`
      yield* sql`ALTER TABLE gt_sources ADD COLUMN vectors_at INTEGER NOT NULL DEFAULT 0`
      yield* sql`DROP TABLE gt_chunks_fts`
      yield* sql`CREATE VIRTUAL TABLE gt_chunks_fts USING fts5(heading, content, terms, tokenize = 'porter unicode61')`
      yield* sql`INSERT INTO gt_chunks_fts (rowid, heading, content, terms) SELECT id, heading, content, terms FROM gt_chunks`
      yield* sql`CREATE TABLE gt_terms (stem TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID`
      yield* sql`CREATE TABLE gt_vectors (
        digest TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (digest, model)
      ) WITHOUT ROWID`
      yield* sql`CREATE INDEX gt_chunks_by_digest ON gt_chunks (digest)`
      const df = new Map<string, number>()
      const rows = yield* sql<{ heading: string; content: string }>`SELECT heading, content FROM gt_chunks`
      for (const row of rows) for (const s of stems(`${row.heading}\n${row.content}`)) df.set(s, (df.get(s) ?? 0) + 1)
      const entries = [...df].map(([stem, n]) => ({ stem, df: n }))
      for (let i = 0; i < entries.length; i += 400)
        yield* sql`INSERT INTO gt_terms ${sql.insert(entries.slice(i, i + 400))}`
      yield* sql`UPDATE gt_sources SET selection = 'chunker-changed'`
    })
  }
}

export const groundTruthMigrations = withPostgres(sqlite, groundTruthPgMigrations)
