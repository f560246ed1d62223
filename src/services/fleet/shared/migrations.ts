import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../../platform/Database.js"
import { withPostgres } from "../../platform/migrations/byDialect.js"
import { fleetPgMigrations } from "./migrations.pg.js"

/** SQLite's migrations, as landed (never edited: add one). PostgreSQL's, id for id, are in migrations.pg.ts. */
const sqlite: DomainMigrations = {
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
    }),
    "0002_autonomy_control": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The reconciler's emergency pause (one row) and its circuit breaker per target: in SQL so every
      // process (the server's scheduled tick, `ctl optimize run`) sees the same state.
      yield* sql`CREATE TABLE autonomy_pause (
        id INTEGER PRIMARY KEY,
        paused INTEGER NOT NULL,
        reason TEXT,
        changed_by TEXT,
        changed_at BIGINT NOT NULL
      )`
      yield* sql`CREATE TABLE autonomy_breakers (
        target TEXT PRIMARY KEY,
        failures INTEGER NOT NULL,
        opened_at BIGINT,
        last_error TEXT,
        updated_at BIGINT NOT NULL
      )`
    }),
    "0003_job_cancel_reason": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // A queued job the system cancelled keeps why and by what (a handoff: handoff_cancelled + its transaction).
      yield* sql`ALTER TABLE jobs ADD COLUMN cancel_reason TEXT`
      yield* sql`ALTER TABLE jobs ADD COLUMN cancel_ref TEXT`
    }),
    "0004_release_catalog": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // What was published (docs/releases.md, "Catalog"): one row per product and version.
      yield* sql`CREATE TABLE release_catalog (
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        channel TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        tree TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        manifest_sha256 TEXT NOT NULL,
        key_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (product, version)
      )`
      // A used version and its platform identities belong to one source revision forever: rows are never
      // updated to another revision, and the release_store cleaner never deletes them.
      yield* sql`CREATE TABLE release_reservations (
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        reserved_at BIGINT NOT NULL,
        PRIMARY KEY (product, version, platform)
      )`
    }),
    "0005_job_idempotency_key": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // A submitter's key names one job forever: re-submitting it (a resumed release run) queues nothing new.
      yield* sql`ALTER TABLE jobs ADD COLUMN idempotency_key TEXT`
      yield* sql`CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL`
    }),
    "0006_release_submissions": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Every submitted run's source and manifest identity (seed 002, submission rule 1), recorded before its
      // build: the release_store cleaner and the audit read what was submitted, not only what was published.
      yield* sql`CREATE TABLE release_submissions (
        run_id TEXT PRIMARY KEY,
        product TEXT NOT NULL,
        version TEXT NOT NULL,
        channel TEXT NOT NULL,
        platform TEXT NOT NULL,
        revision TEXT NOT NULL,
        tree TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        source_size BIGINT NOT NULL,
        manifest_sha256 TEXT NOT NULL,
        submitted_at BIGINT NOT NULL
      )`
    })
  }
}

export const fleetMigrations = withPostgres(sqlite, fleetPgMigrations)
