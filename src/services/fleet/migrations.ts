import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"

export const fleetMigrations: DomainMigrations = {
  domain: "fleet",
  migrations: {
    "0001_create_jobs": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // A running job belongs to `worker` until `lease_expires_at`; past it any worker may reclaim it.
      yield* sql`CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        argv TEXT NOT NULL,
        state TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        worker TEXT,
        lease_expires_at INTEGER,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        exit_code INTEGER,
        error TEXT
      )`
      yield* sql`CREATE INDEX jobs_by_state ON jobs (state, seq)`
      yield* sql`CREATE TABLE job_output (
        job_id TEXT NOT NULL,
        line_no INTEGER NOT NULL,
        stream TEXT NOT NULL,
        line TEXT NOT NULL,
        PRIMARY KEY (job_id, line_no)
      )`
      yield* sql`CREATE TABLE queue_control (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      )`
    })
  }
}
