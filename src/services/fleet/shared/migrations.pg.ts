import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { portable } from "../../platform/migrations/byDialect.js"

/**
 * The fleet's migrations on PostgreSQL, id for id with migrations.ts: BIGINT where 0001/0002 say INTEGER (job
 * sequence numbers, attempts, exit codes and millisecond times; SQLite's integers are 64-bit). 0003-0006 were
 * written in the common subset and run as they are.
 */
export const fleetPgMigrations = {
  "0001_create_jobs": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE jobs (
      id TEXT PRIMARY KEY,
      seq BIGINT NOT NULL,
      kind TEXT NOT NULL,
      target TEXT NOT NULL,
      argv TEXT NOT NULL,
      state TEXT NOT NULL,
      attempt BIGINT NOT NULL DEFAULT 0,
      worker TEXT,
      lease_expires_at BIGINT,
      created_at BIGINT NOT NULL,
      started_at BIGINT,
      finished_at BIGINT,
      exit_code BIGINT,
      error TEXT
    )`
    yield* sql`CREATE INDEX jobs_by_state ON jobs (state, seq)`
    yield* sql`CREATE TABLE job_output (
      job_id TEXT NOT NULL,
      line_no BIGINT NOT NULL,
      stream TEXT NOT NULL,
      line TEXT NOT NULL,
      PRIMARY KEY (job_id, line_no)
    )`
    yield* sql`CREATE TABLE queue_control (key TEXT PRIMARY KEY, value TEXT NOT NULL)`
  }),
  "0002_autonomy_control": Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // One row, id 1, always written with its id: a plain key, not an identity.
    yield* sql`CREATE TABLE autonomy_pause (
      id BIGINT PRIMARY KEY,
      paused BIGINT NOT NULL,
      reason TEXT,
      changed_by TEXT,
      changed_at BIGINT NOT NULL
    )`
    yield* sql`CREATE TABLE autonomy_breakers (
      target TEXT PRIMARY KEY,
      failures BIGINT NOT NULL,
      opened_at BIGINT,
      last_error TEXT,
      updated_at BIGINT NOT NULL
    )`
  }),
  "0003_job_cancel_reason": portable,
  "0004_release_catalog": portable,
  "0005_job_idempotency_key": portable,
  "0006_release_submissions": portable
}
