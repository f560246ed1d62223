import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"
import { withPostgres } from "../platform/migrations/byDialect.js"
import { marketPgMigrations } from "./migrations.pg.js"

/** SQLite's migrations, as landed (never edited: add one). PostgreSQL's, id for id, are in migrations.pg.ts. */
const sqlite: DomainMigrations = {
  domain: "market",
  migrations: {
    "0001_create_ledger": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // One row per (account, asset): a projection of the journal that the audit recomputes.
      yield* sql`CREATE TABLE ledger_balances (
        account TEXT NOT NULL,
        asset TEXT NOT NULL,
        balance INTEGER NOT NULL,
        PRIMARY KEY (account, asset)
      )`
      // Append-only: an entry's legs sum to zero per asset (double entry).
      yield* sql`CREATE TABLE ledger_entries (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        reference TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE ledger_legs (
        entry_id INTEGER NOT NULL REFERENCES ledger_entries (id),
        account TEXT NOT NULL,
        asset TEXT NOT NULL,
        amount INTEGER NOT NULL
      )`
      yield* sql`CREATE INDEX ledger_legs_by_account ON ledger_legs (account, asset)`
    }),
    "0002_create_curves": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The curve's virtual reserves; its real coin and token reserves are the ledger balances of `curve:<TICKER>`.
      yield* sql`CREATE TABLE market_curves (
        ticker TEXT PRIMARY KEY,
        virtual_coin INTEGER NOT NULL,
        virtual_token INTEGER NOT NULL,
        real_token INTEGER NOT NULL,
        launched_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE market_trades (
        id INTEGER PRIMARY KEY,
        ticker TEXT NOT NULL,
        wallet TEXT NOT NULL,
        side TEXT NOT NULL,
        coin INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        fee INTEGER NOT NULL,
        entry_id INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`
      yield* sql`CREATE INDEX market_trades_by_ticker ON market_trades (ticker, created_at)`
    }),
    "0003_create_agents_auth_chat": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // An agent and its token share the ticker; its coin balance is the ledger account `agent:<TICKER>`.
      yield* sql`CREATE TABLE market_agents (
        ticker TEXT PRIMARY KEY,
        instance_id TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        status TEXT NOT NULL,
        burn_rate_hourly INTEGER NOT NULL,
        total_revenue INTEGER NOT NULL DEFAULT 0,
        total_costs INTEGER NOT NULL DEFAULT 0,
        costs_accrued_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      )`
      // The curve's state after each trade, for the price a day ago (price_change_24h).
      yield* sql`ALTER TABLE market_trades ADD COLUMN virtual_coin_after INTEGER`
      yield* sql`ALTER TABLE market_trades ADD COLUMN virtual_token_after INTEGER`
      yield* sql`CREATE INDEX market_trades_by_time ON market_trades (created_at)`
      // Only a hash of a key is kept; the prefix identifies it in listings.
      yield* sql`CREATE TABLE market_api_keys (
        id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        wallet TEXT,
        agent TEXT,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      )`
      // A signed request's nonce is accepted once while its timestamp is inside the window.
      yield* sql`CREATE TABLE market_wallet_nonces (
        address TEXT NOT NULL,
        nonce TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (address, nonce)
      )`
      yield* sql`CREATE TABLE market_idempotency (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (principal, key)
      )`
      yield* sql`CREATE TABLE market_chat (
        id INTEGER PRIMARY KEY,
        sender_ticker TEXT NOT NULL,
        sender_name TEXT NOT NULL,
        message TEXT NOT NULL,
        message_type TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`
      // The outbox of /api/stream: written in the transaction that commits the trade or message.
      yield* sql`CREATE TABLE market_events (
        seq INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`
      yield* sql`CREATE TABLE market_coin_prices (
        at INTEGER NOT NULL,
        price INTEGER NOT NULL,
        source TEXT NOT NULL
      )`
      yield* sql`CREATE INDEX market_coin_prices_by_time ON market_coin_prices (at)`
    }),
    // A counter every change of a key moves (a revoke, an edit, a delete; by any connection or process), so
    // the server's memory of live keys knows when to forget them (ApiKeys). Creating a key needs no signal:
    // only keys already seen live are remembered.
    "0004_api_key_changes": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE market_api_key_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`
      yield* sql`INSERT INTO market_api_key_changes (id, n) VALUES (1, 0)`
      yield* sql.unsafe(`CREATE TRIGGER market_api_keys_updated AFTER UPDATE ON market_api_keys
        BEGIN UPDATE market_api_key_changes SET n = n + 1 WHERE id = 1; END`)
      yield* sql.unsafe(`CREATE TRIGGER market_api_keys_deleted AFTER DELETE ON market_api_keys
        BEGIN UPDATE market_api_key_changes SET n = n + 1 WHERE id = 1; END`)
    }),
    // The price history's order among points of one millisecond, and its page cursor, was SQLite's `rowid`, which
    // PostgreSQL has no equivalent of: it becomes a column, `id`. The table is rebuilt with `id` as its INTEGER
    // PRIMARY KEY: the rowid itself, so every id is the rowid it was and a cursor handed out before stays valid.
    "0005_coin_price_ids": Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE market_coin_prices_with_ids (
        id INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        price INTEGER NOT NULL,
        source TEXT NOT NULL
      )`
      yield* sql`INSERT INTO market_coin_prices_with_ids (id, at, price, source)
        SELECT rowid, at, price, source FROM market_coin_prices`
      yield* sql`DROP TABLE market_coin_prices`
      yield* sql`ALTER TABLE market_coin_prices_with_ids RENAME TO market_coin_prices`
      yield* sql`CREATE INDEX market_coin_prices_by_time ON market_coin_prices (at)`
    }),
    // PostgreSQL's key trigger also notifies the processes on the database at commit (migrations.pg.ts). SQLite's
    // processes read the change counter instead (ApiKeyChanges.ts): nothing to change here.
    "0006_api_key_notify": Effect.void
  }
}

export const marketMigrations = withPostgres(sqlite, marketPgMigrations)
