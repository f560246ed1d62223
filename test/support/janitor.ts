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

const GIB = 1024 ** 3
const DAY_SECONDS = 86_400

/** A registry file in `dir` with one local linux target `host`, its `disk_cleanup` policy given (or none). */
export const janitorRegistry = (dir: string, host: string, policy: Record<string, unknown> | undefined) => {
  const file = path.join(dir, "registry.yml")
  const body = {
    version: 1,
    targets: [{ name: host, os: "linux", channel: "local", ...(policy === undefined ? {} : { disk_cleanup: policy }) }]
  }
  fs.writeFileSync(file, JSON.stringify(body)) // JSON is YAML
  return file
}

/** The janitor tests' enforcing policy over one build_caches root (a day's minimum age), with overrides. */
export const janitorPolicy = (buildRoot: string, overrides: Record<string, unknown> = {}) => ({
  mode: "enforce",
  check_interval_seconds: 3600,
  low_free_gb: 50,
  target_free_gb: 100,
  max_items_per_pass: 100,
  max_bytes_per_pass: 10 * GIB,
  max_scan_items: 200_000,
  cleaners: { build_caches: { min_age_seconds: DAY_SECONDS, root: buildRoot } },
  ...overrides
})
