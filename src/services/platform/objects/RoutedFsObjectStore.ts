import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { ObjectStoreError } from "../../../contracts/shared/ObjectErrors.js"
import { makeFsObjectStore } from "./FsObjectStore.js"
import { ObjectStore } from "./ObjectStore.js"

/** What a route file says: the absolute path of the root the object API serves, on its first line. */
export const readRoute = (routeFile: string) => {
  const root = fs.readFileSync(routeFile, "utf8").split("\n")[0]?.trim() ?? ""
  if (!path.isAbsolute(root)) throw new Error(`${routeFile} must name an absolute root directory on its first line`)
  return root
}

/** Writes a route file atomically (temporary file, rename): a reader sees the old root or the new one. */
export const writeRoute = (routeFile: string, root: string) => {
  const staged = `${routeFile}.${process.pid}.tmp`
  fs.writeFileSync(staged, `${root}\n`)
  fs.renameSync(staged, routeFile)
}

/**
 * The fs object store on the root a **route file** names (KEEL_OBJECT_ROUTE_FILE): read at start and again on
 * every operation whose route file changed since (its inode, size or mtime) — a storage-root handoff switches the
 * object API to another root by rewriting the file. An unreadable route fails the operation, never falls back.
 */
export const makeRoutedFsObjectStore = (routeFile: string): ObjectStore["Type"] => {
  let current: { stamp: string; root: string; store: ObjectStore["Type"] } | undefined
  const resolve = (key: string) =>
    Effect.try({
      try: () => {
        const stat = fs.statSync(routeFile)
        const stamp = `${stat.ino}:${stat.size}:${stat.mtimeMs}`
        if (current?.stamp !== stamp) {
          const root = readRoute(routeFile)
          current = { stamp, root, store: current?.root === root ? current.store : makeFsObjectStore(root) }
        }
        return current.store
      },
      catch: (error) =>
        new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key, detail: `object route: ${(error as Error).message}` })
    })
  return {
    scheme: "fs",
    get: (key) => Effect.flatMap(resolve(key), (store) => store.get(key)),
    head: (key) => Effect.flatMap(resolve(key), (store) => store.head(key)),
    put: (key, bytes) => Effect.flatMap(resolve(key), (store) => store.put(key, bytes)),
    putIfAbsent: (key, bytes) => Effect.flatMap(resolve(key), (store) => store.putIfAbsent(key, bytes)),
    putIfMatch: (key, expected, bytes) =>
      Effect.flatMap(resolve(key), (store) => store.putIfMatch(key, expected, bytes)),
    write: (key, body, condition) => Effect.flatMap(resolve(key), (store) => store.write(key, body, condition)),
    read: (key) => Effect.flatMap(resolve(key), (store) => store.read(key)),
    list: (prefix, page) => Effect.flatMap(resolve(prefix), (store) => store.list(prefix, page)),
    delete: (key) => Effect.flatMap(resolve(key), (store) => store.delete(key))
  }
}

export const RoutedFsObjectStoreLayer = (routeFile: string) =>
  Layer.sync(ObjectStore, () => makeRoutedFsObjectStore(routeFile))
