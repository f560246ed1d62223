import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DomainMigrations } from "../platform/Database.js"

export const marketMigrations: DomainMigrations = {
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
    })
  }
}
