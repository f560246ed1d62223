import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ConfigProvider, Effect, Layer } from "effect"
import {
  AppConfigTest,
  DiskMeter,
  FleetRegistry,
  Janitor,
  JobQueue,
  MemoryObjectStoreLayer,
  ObjectGateway,
  SqlTest
} from "./keel.js"

/** A meter whose free space is scripted by the test (bytes, read on each measurement). */
export const scriptedMeter = (free: () => number) => Layer.succeed(DiskMeter, { available: () => Effect.sync(free) })

/** The Janitor on the test graph: host `jan`, `env` as its configuration, its own data dir unless given. */
export const janitorTestLayer = (
  env: Record<string, string>,
  meter: Layer.Layer<DiskMeter>,
  dataDir: string = fs.mkdtempSync(path.join(os.tmpdir(), "keel-janitor-data-")),
  /** The database file the janitor protects (the graph's own database stays in memory). */
  databaseFile?: string
) =>
  Janitor.Default.pipe(
    Layer.provide(meter),
    Layer.provideMerge(JobQueue.Default),
    Layer.provideMerge(FleetRegistry.Default),
    Layer.provideMerge(ObjectGateway.Default),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(SqlTest),
    Layer.provideMerge(AppConfigTest(databaseFile === undefined ? { dataDir } : { dataDir, databaseFile })),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ KEEL_HOST: "jan", ...env }))))
    )
  )
