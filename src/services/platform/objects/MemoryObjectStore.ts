import { Clock, Effect, Layer, Option } from "effect"
import { sha256Hex } from "../Digest.js"
import {
  bytesRead,
  collectingWrite,
  type ListPage,
  ObjectStore,
  type StoredObject,
  withKeyRules
} from "./ObjectStore.js"

/** Objects in a Map: for tests and embedders that want nothing on disk. */
export const MemoryObjectStoreLayer = Layer.sync(ObjectStore, () => {
  const objects = new Map<string, StoredObject>()
  const store = (key: string, bytes: Uint8Array, now: number): StoredObject => {
    const stored = {
      key,
      bytes: Uint8Array.from(bytes),
      size: bytes.byteLength,
      sha256: sha256Hex(bytes),
      modifiedAt: now
    }
    objects.set(key, stored)
    return stored
  }
  const headOf = ({ bytes: _bytes, ...head }: StoredObject) => head
  const base = {
    scheme: "memory",
    get: (key) => Effect.sync(() => Option.fromNullable(objects.get(key))),
    head: (key) => Effect.sync(() => Option.map(Option.fromNullable(objects.get(key)), headOf)),
    put: (key, bytes) => Effect.map(Clock.currentTimeMillis, (now) => headOf(store(key, bytes, now))),
    putIfAbsent: (key, bytes) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const existing = objects.get(key)
        return existing === undefined
          ? { created: true, head: headOf(store(key, bytes, now)) }
          : { created: false, head: headOf(existing) }
      }),
    putIfMatch: (key, expected, bytes) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const existing = objects.get(key)
        return existing?.sha256 === expected
          ? { replaced: true, head: Option.some(headOf(store(key, bytes, now))) }
          : { replaced: false, head: Option.map(Option.fromNullable(existing), headOf) }
      }),
    list: (prefix: string, page: ListPage = {}) =>
      Effect.sync(() =>
        [...objects.values()]
          .filter((o) => o.key.startsWith(prefix) && (page.after === undefined || o.key > page.after))
          .sort((a, b) => (a.key < b.key ? -1 : 1))
          .slice(0, page.limit ?? Number.POSITIVE_INFINITY)
          .map(headOf)
      ),
    delete: (key: string) => Effect.sync(() => objects.delete(key))
  } satisfies Omit<ObjectStore["Type"], "write" | "read">
  return withKeyRules({ ...base, write: collectingWrite(base), read: bytesRead(base) })
})
