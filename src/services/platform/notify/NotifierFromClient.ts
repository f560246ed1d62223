import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { makeInProcessNotifier } from "./InProcessNotifier.js"
import { Notifier } from "./Notifier.js"
import { listenerConfig, makePgNotifier } from "./PgNotifier.js"

/**
 * The `Notifier` for the engine of the `SqlClient` in context, provided beside it as its `SqlDialect` is (one per
 * database a process opens, so one listener connection per process): `LISTEN`/`NOTIFY` on PostgreSQL, with the
 * pool's connection settings; in-process on SQLite, whose other processes are not heard (they are found by reading:
 * docs/database.md, "Notifications between processes").
 */
export const notifierFromClient = Layer.scoped(
  Notifier,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pgClient = yield* Effect.serviceOption(PgClient.PgClient)
    return yield* sql.onDialectOrElse({
      pg: () =>
        Option.match(pgClient, {
          onSome: (client) => makePgNotifier(sql, listenerConfig(client.config)),
          // A PostgreSQL SqlClient that is not @effect/sql-pg's: nothing to open a listener with.
          onNone: () => makeInProcessNotifier
        }),
      orElse: () => makeInProcessNotifier
    })
  })
)
