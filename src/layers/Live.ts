import { Layer } from "effect"
import { LeaseKeeperLive } from "../actors/LeaseKeeper.js"
import { Answerer } from "../services/groundtruth/Answerer.js"
import { BrandAssets } from "../services/groundtruth/BrandAssets.js"
import { GtConfig } from "../services/groundtruth/GtConfig.js"
import { Ingester } from "../services/groundtruth/Ingester.js"
import { Retriever } from "../services/groundtruth/Retriever.js"
import { Sources } from "../services/groundtruth/Sources.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { singleRunnerFromConfig } from "../services/platform/Cluster.js"
import { Database, migrationsLayer, sqliteFromConfig } from "../services/platform/Database.js"
import { Health } from "../services/platform/Health.js"
import { Leases } from "../services/platform/Leases.js"
import { Assigner } from "../services/product/Assigner.js"
import { Blog } from "../services/product/Blog.js"
import { Collector } from "../services/product/Collector.js"
import { JourneyRegistry } from "../services/product/JourneyRegistry.js"
import { Onboarding } from "../services/product/Onboarding.js"
import { ProductConfig } from "../services/product/ProductConfig.js"
import { AllMigrations } from "./Migrations.js"

/** The embedded SQLite database of the data dir, migrated before anything reads it. */
export const SqlLive = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(sqliteFromConfig))

/** The database without its migrations: for `ctl db migrate`, which applies them itself. */
export const SqliteUnmigratedLive = sqliteFromConfig.pipe(Layer.provideMerge(AppConfig.Default))

/** Every domain service on the embedded defaults. No actor runtime: safe for one-shot CLI commands. */
export const ServicesLive = Layer.mergeAll(
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
  Layer.provideMerge(SqlLive),
  Layer.provideMerge(AppConfig.Default)
)

/** The entities this process hosts, on the single embedded runner. */
export const EntitiesLive = LeaseKeeperLive.pipe(Layer.provideMerge(singleRunnerFromConfig))

/** Services plus the actor runtime: what a long-running server needs. */
export const AppLive = EntitiesLive.pipe(Layer.provideMerge(ServicesLive))
