import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"

export const groundTruthMigrations: DomainMigrations = {
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
    })
  }
}
