import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"

export const productMigrations: DomainMigrations = {
  domain: "product",
  migrations: {
    "0001_create_experiment_assignments": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The first assignment of a subject to an experiment; it wins for ever after.
      yield* sql`CREATE TABLE experiment_assignments (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        assigned_at INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, subject)
      )`
      // One row per (experiment, subject): first and last exposure and how many.
      yield* sql`CREATE TABLE experiment_exposures (
        experiment_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        variant TEXT NOT NULL,
        first_exposed_at INTEGER NOT NULL,
        last_exposed_at INTEGER NOT NULL,
        exposures INTEGER NOT NULL,
        PRIMARY KEY (experiment_id, subject)
      )`
    })
  }
}
