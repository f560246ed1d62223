import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Option } from "effect"
import { ObjectStoreError } from "../../../contracts/shared/ObjectErrors.js"
import { sha256Hex } from "../Digest.js"
import { bytesRead, collectingWrite, type ListPage, type ObjectHead, ObjectStore, withKeyRules } from "./ObjectStore.js"

interface ObjectRow {
  readonly key: string
  readonly size: number
  readonly sha256: string
  readonly modified_at: number
}

const toHead = (row: ObjectRow): ObjectHead => ({
  key: row.key,
  size: Number(row.size),
  sha256: row.sha256,
  modifiedAt: Number(row.modified_at)
})

/**
 * The least text greater than every key that starts with `prefix`, in code point order (which SQLite's BINARY
 * collation and PostgreSQL's `C` collations both sort UTF-8 by): its last code point that can grow, grown by one
 * (a surrogate is no code point: past U+D7FF comes U+E000). Undefined when no text bounds them (an empty prefix,
 * or one of U+10FFFF only).
 *
 * Listing by prefix is the range `prefix <= key < prefixEnd(prefix)`: case-sensitive on both engines (SQLite's
 * `LIKE` is not, for ASCII; PostgreSQL's is), with no character that needs escaping, and served by the primary key.
 */
export const prefixEnd = (prefix: string): string | undefined => {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!)
  while (points.length > 0) {
    const last = points.pop()!
    if (last < 0x10ffff) {
      points.push(last === 0xd7ff ? 0xe000 : last + 1)
      return String.fromCodePoint(...points)
    }
  }
  return undefined
}

/** Objects as rows of the `objects` table of the application's SqlClient (SQLite here, Postgres later). */
export const SqlObjectStoreLayer = Layer.effect(
  ObjectStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const guard =
      (key: string) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.mapError(
          effect,
          (cause) => new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key, detail: String(cause) })
        )
    const row = (key: string, bytes: Uint8Array, now: number) => ({
      key,
      body: bytes,
      size: bytes.byteLength,
      sha256: sha256Hex(bytes),
      modified_at: now
    })
    const base = {
      scheme: "sql",
      get: (key) =>
        sql<
          ObjectRow & { body: Uint8Array }
        >`SELECT key, body, size, sha256, modified_at FROM objects WHERE key = ${key}`.pipe(
          Effect.map((rows) =>
            rows[0] === undefined
              ? Option.none()
              : Option.some({ ...toHead(rows[0]), bytes: new Uint8Array(rows[0].body) })
          ),
          guard(key)
        ),
      head: (key) =>
        sql<ObjectRow>`SELECT key, size, sha256, modified_at FROM objects WHERE key = ${key}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toHead)),
          guard(key)
        ),
      put: (key, bytes) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const values = row(key, bytes, now)
          yield* sql`INSERT INTO objects ${sql.insert(values)} ON CONFLICT (key) DO UPDATE SET body = excluded.body,
            size = excluded.size, sha256 = excluded.sha256, modified_at = excluded.modified_at`
          return toHead(values)
        }).pipe(guard(key)),
      putIfAbsent: (key, bytes) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const values = row(key, bytes, now)
          const inserted = yield* sql<{ key: string }>`INSERT INTO objects ${sql.insert(values)}
            ON CONFLICT (key) DO NOTHING RETURNING key`
          if (inserted.length > 0) return { created: true, head: toHead(values) }
          const existing = yield* sql<ObjectRow>`SELECT key, size, sha256, modified_at FROM objects WHERE key = ${key}`
          return { created: false, head: toHead(existing[0]!) }
        }).pipe(guard(key)),
      putIfMatch: (key, expected, bytes) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const values = row(key, bytes, now)
          // One statement: the comparison and the write cannot be separated by another writer.
          const replaced = yield* sql<{ key: string }>`UPDATE objects SET body = ${values.body}, size = ${values.size},
            sha256 = ${values.sha256}, modified_at = ${values.modified_at}
            WHERE key = ${key} AND sha256 = ${expected} RETURNING key`
          if (replaced.length > 0) return { replaced: true, head: Option.some(toHead(values)) }
          const current = yield* sql<ObjectRow>`SELECT key, size, sha256, modified_at FROM objects WHERE key = ${key}`
          return { replaced: false, head: Option.map(Option.fromNullable(current[0]), toHead) }
        }).pipe(guard(key)),
      list: (prefix: string, page: ListPage = {}) => {
        // An absent bound is one no key reaches: the empty string (keys are never empty) and the largest safe integer.
        const end = prefixEnd(prefix)
        return sql<ObjectRow>`SELECT key, size, sha256, modified_at FROM objects WHERE key >= ${prefix}
          ${end === undefined ? sql`` : sql`AND key < ${end}`}
          AND key > ${page.after ?? ""} ORDER BY key LIMIT ${page.limit ?? Number.MAX_SAFE_INTEGER}`.pipe(
          Effect.map((rows) => rows.map(toHead)),
          guard(prefix)
        )
      },
      delete: (key: string) =>
        sql<{ key: string }>`DELETE FROM objects WHERE key = ${key} RETURNING key`.pipe(
          Effect.map((rows) => rows.length > 0),
          guard(key)
        )
    } satisfies Omit<ObjectStore["Type"], "write" | "read">
    return withKeyRules({ ...base, write: collectingWrite(base), read: bytesRead(base) })
  })
)
