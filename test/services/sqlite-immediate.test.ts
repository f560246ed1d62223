import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import * as SqliteImmediate from "../../src/services/platform/sql/SqliteImmediate.js"

// Several processes share keel.db. A transaction that reads and then writes must hold the write lock from its
// start: with SQLite's deferred BEGIN, another process committing in between makes its write fail at once with
// SQLITE_BUSY_SNAPSHOT (no busy timeout applies), which is how a workflow start once failed as a 500 while a
// `ctl machine work` worker polled the job queue.

const fileDatabase = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-immediate-")), "keel.db")

describe("SQLite transactions open BEGIN IMMEDIATE", () => {
  it.scoped("another process cannot commit between a transaction's read and its write", () => {
    const file = fileDatabase()
    return Effect.gen(function* () {
      const other = new Database(file)
      other.pragma("journal_mode = WAL")
      other.exec("CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)")
      other.exec("INSERT INTO counters VALUES ('a', 0)")
      other.pragma("busy_timeout = 0")

      const sql = yield* SqlClient.SqlClient
      const refusedInside = yield* sql.withTransaction(
        Effect.gen(function* () {
          const [row] = yield* sql<{ n: number }>`SELECT n FROM counters WHERE name = 'a'`
          // The other process tries to write now: the lock is already this transaction's.
          let refused = ""
          try {
            other.exec("UPDATE counters SET n = n + 100 WHERE name = 'a'")
          } catch (error) {
            refused = (error as { code?: string }).code ?? String(error)
          }
          yield* sql`UPDATE counters SET n = ${row!.n + 1} WHERE name = 'a'`
          return refused
        })
      )
      assert.match(refusedInside, /^SQLITE_BUSY/)
      // After the commit the other process writes normally, on top of this transaction's write.
      other.exec("UPDATE counters SET n = n + 100 WHERE name = 'a'")
      const [after] = yield* sql<{ n: number }>`SELECT n FROM counters WHERE name = 'a'`
      assert.strictEqual(after!.n, 101)
      other.close()
    }).pipe(Effect.provide(SqliteImmediate.layer({ filename: file })))
  })
})
