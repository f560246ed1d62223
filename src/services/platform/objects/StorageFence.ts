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
    return {
      holder: Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ holder: string }>`SELECT holder FROM leases
          WHERE key = ${STORAGE_FENCE_KEY} AND expires_at > ${now}`
        return Option.fromNullable(rows[0]?.holder)
      }).pipe(Effect.orDie)
    }
  })
)
