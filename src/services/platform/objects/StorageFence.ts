import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"

/** The lease a storage-root handoff holds while it moves data: every object write on this host is refused. */
export const STORAGE_FENCE_KEY = "storage-fence"

/**
 * Whether this host's storage-write fence is held (the `storage-fence` lease of its database, taken by a
 * storage-root handoff): the object gateway asks before every write. A graph without it (tests, embedders that
 * never hand off) is never fenced.
 */
export class StorageFence extends Context.Tag("platform/StorageFence")<
  StorageFence,
  { readonly holder: Effect.Effect<Option.Option<string>> }
>() {}

export const StorageFenceLive = Layer.effect(
  StorageFence,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // "Now" as the leases decide it (Leases.ts): the process clock on SQLite, the database server's on PostgreSQL,
    // read in the same statement. With the process clock, a runner behind the server saw a released fence as held,
    // and one ahead of it saw a live fence as lapsed and wrote during the handoff.
    const holders = sql.onDialectOrElse({
      pg: () => sql<{ holder: string }>`SELECT holder FROM leases
          WHERE key = ${STORAGE_FENCE_KEY} AND expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint`,
      orElse: () =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (now) => sql<{ holder: string }>`SELECT holder FROM leases
          WHERE key = ${STORAGE_FENCE_KEY} AND expires_at > ${now}`
        )
    })
    return {
      holder: holders.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.holder)),
        Effect.orDie
      )
    }
  })
)
