import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../Database.js"
import { withPostgres } from "./byDialect.js"
import { platformPgMigrations } from "./platform.pg.js"

/** SQLite's migrations, as landed (never edited: add one). PostgreSQL's, id for id, are in platform.pg.ts. */
const sqlite: DomainMigrations = {
  domain: "platform",
  migrations: {
    "0001_create_leases": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        fence INTEGER NOT NULL,
        acquired_at INTEGER NOT NULL,
        renewed_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`
    }),
    "0002_create_demo_seeds": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE demo_seeds (
        domain TEXT PRIMARY KEY,
        seeded_at INTEGER NOT NULL
      )`
    }),
    "0003_create_objects": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The SQL backend of the object gateway (KEEL_OBJECT_STORE=sql).
      yield* sql`CREATE TABLE objects (
        key TEXT PRIMARY KEY,
        body BLOB NOT NULL,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        modified_at INTEGER NOT NULL
      )`
    }),
    "0004_create_vault": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // Values are sealed (AES-256-GCM, the item name as associated data); field names are not secret.
      yield* sql`CREATE TABLE vault_items (
        name TEXT PRIMARY KEY,
        nonce BLOB NOT NULL,
        ciphertext BLOB NOT NULL,
        tag BLOB NOT NULL,
        fields TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE vault_grants (
        id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL,
        actions TEXT NOT NULL,
        items TEXT NOT NULL,
        hosts TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      )`
      yield* sql`CREATE TABLE vault_tokens (
        hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE vault_audit (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        event TEXT NOT NULL,
        consumer TEXT,
        grant_id TEXT,
        detail TEXT
      )`
    }),
    // PostgreSQL only (platform.pg.ts): SQLite's text already compares by code point (BINARY).
    "0005_objects_key_code_point_order": Effect.void
  }
}

export const platformMigrations = withPostgres(sqlite, platformPgMigrations)
