import { Duration, Layer } from "effect"
import { LeaseKeeperLive } from "../actors/LeaseKeeper.js"
import { Answerer } from "../services/groundtruth/Answerer.js"
import { BrandAssets } from "../services/groundtruth/BrandAssets.js"
import { GtConfig } from "../services/groundtruth/GtConfig.js"
import { Ingester } from "../services/groundtruth/Ingester.js"
import { Retriever } from "../services/groundtruth/Retriever.js"
import { Sources } from "../services/groundtruth/Sources.js"
import { AppConfig, type AppSettings } from "../services/platform/AppConfig.js"
import { singleRunner } from "../services/platform/Cluster.js"
import { Database, migrationsLayer, sqliteMemory } from "../services/platform/Database.js"
import { Health } from "../services/platform/Health.js"
import { Leases } from "../services/platform/Leases.js"
import { Assigner } from "../services/product/Assigner.js"
import { Blog } from "../services/product/Blog.js"
import { Collector } from "../services/product/Collector.js"
import { JourneyRegistry } from "../services/product/JourneyRegistry.js"
import { Onboarding } from "../services/product/Onboarding.js"
import { ProductConfig } from "../services/product/ProductConfig.js"
import { AllMigrations } from "./Migrations.js"

export const testSettings = (overrides: Partial<AppSettings> = {}): AppSettings => ({
  dataDir: "/nonexistent/keel-test",
  databaseFile: ":memory:",
  httpHost: "127.0.0.1",
  httpPort: 0,
  bodyLimitBytes: 1024 * 1024,
  shutdownGrace: Duration.seconds(5),
  logFormat: "json",
  logLevel: "warning",
  demoData: false,
  clusterPollInterval: Duration.millis(100),
  requestLog: false,
  ...overrides
})

/** Settings for tests and embedders: an in-memory database and nothing on disk. */
export const AppConfigTest = (overrides: Partial<AppSettings> = {}) =>
  Layer.succeed(AppConfig, AppConfig.make(testSettings(overrides)))

/** Real SQLite, in memory, with every migration applied. */
export const SqlTest = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(sqliteMemory))

export const ServicesTest = (overrides: Partial<AppSettings> = {}) =>
  Layer.mergeAll(
    Health.Default,
    Leases.Default,
    Collector.Default,
    Onboarding.Default,
    Blog.Default,
    Ingester.Default,
    Answerer.Default,
    BrandAssets.Default
  ).pipe(
    Layer.provideMerge(Retriever.Default),
    Layer.provideMerge(Sources.Default),
    Layer.provideMerge(GtConfig.Default),
    Layer.provideMerge(Assigner.Default),
    Layer.provideMerge(JourneyRegistry.Default),
    Layer.provideMerge(ProductConfig.Default),
    Layer.provideMerge(Database.Default),
    Layer.provideMerge(SqlTest),
    Layer.provideMerge(AppConfigTest(overrides))
  )

/** The single runner with test-speed intervals (messages polled every 100 ms, no termination wait). */
export const ClusterTest = singleRunner({ pollInterval: "100 millis", runnerStorage: "memory", terminationTimeout: 0 })

export const AppTest = (overrides: Partial<AppSettings> = {}) =>
  LeaseKeeperLive.pipe(Layer.provideMerge(ClusterTest), Layer.provideMerge(ServicesTest(overrides)))
