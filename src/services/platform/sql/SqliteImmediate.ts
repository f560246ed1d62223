import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, Statement } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Effect, Layer } from "effect"

/**
 * `@effect/sql-sqlite-node`'s client with one change: `sql.withTransaction` opens `BEGIN IMMEDIATE` instead of
 * SQLite's deferred `BEGIN`.
 *
 * Why: several processes share `keel.db` (the server, `ctl` commands, `ctl machine work` workers). A deferred
 * transaction that reads and then writes while another process commits in between fails at once with
 * `SQLITE_BUSY_SNAPSHOT` — SQLite cannot wait for it, the busy timeout does not apply. @effect/cluster's message
 * storage does exactly that (select, then insert, retried three times without a pause), so a workflow start
 * could fail as a 500 while a worker polled the job queue. `BEGIN IMMEDIATE` takes the write lock first and waits
 * up to the busy timeout for it, which is what Keel's own hot paths (`SqlDirect`) already do.
 *
 * The `SqliteClient` tag keeps the driver's client (its config names the file the hot connection opens); the
 * `SqlClient` tag is this one. Both share the one connection and its lock.
 */
export const layer = (config: SqliteClient.SqliteClientConfig) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const driver = yield* SqliteClient.make(config)
      const client = yield* SqlClient.make({
        // A statement outside a transaction takes the connection's lock for itself only, as the driver's does.
        acquirer: Effect.scoped(driver.reserve),
        transactionAcquirer: driver.reserve,
        compiler: Statement.makeCompilerSqlite(),
        beginTransaction: "BEGIN IMMEDIATE",
        spanAttributes: [["db.system.name", "sqlite"]]
      })
      return Context.make(SqliteClient.SqliteClient, driver).pipe(Context.add(SqlClient.SqlClient, client))
    })
  ).pipe(Layer.provide(Reactivity.layer))
