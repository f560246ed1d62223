import * as path from "node:path"
import { Config, Effect, Layer } from "effect"
import { AppConfig, objectDirSetting, objectStoreSetting } from "../services/platform/AppConfig.js"
import { FsObjectStoreLayer } from "../services/platform/objects/FsObjectStore.js"
import { MemoryObjectStoreLayer } from "../services/platform/objects/MemoryObjectStore.js"
import { RoutedFsObjectStoreLayer } from "../services/platform/objects/RoutedFsObjectStore.js"
import { SqlObjectStoreLayer } from "../services/platform/objects/SqlObjectStore.js"

/**
 * The configured object backend: `fs` (default: a directory, KEEL_OBJECT_DIR or `<data dir>/objects`; with
 * KEEL_OBJECT_ROUTE_FILE, the directory that file names, followed when it changes), `sql` (the `objects` table
 * of the application database) or `memory` (a map in the process).
 */
export const ObjectStoreLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const app = yield* AppConfig
    const backend = yield* objectStoreSetting
    if (backend === "sql") return SqlObjectStoreLayer
    // Embedders that want nothing on disk; gone with the process.
    if (backend === "memory") return MemoryObjectStoreLayer
    // A storage-root handoff target: the served root is whatever its route file names (docs/handoff.md).
    const route = yield* Config.option(Config.string("KEEL_OBJECT_ROUTE_FILE"))
    if (route._tag === "Some") return RoutedFsObjectStoreLayer(path.resolve(route.value))
    const dir = yield* objectDirSetting(app.dataDir)
    return FsObjectStoreLayer(path.resolve(dir))
  })
)
