import { Layer } from "effect"
import { LeaseKeeperLive } from "../actors/LeaseKeeper.js"
import { MarketAgentLive } from "../actors/MarketAgent.js"
import { Gates } from "../services/fleet/gates/Gates.js"
import { DiskMeter } from "../services/fleet/janitor/DiskMeter.js"
import { Janitor } from "../services/fleet/janitor/Janitor.js"
import { JobWorker } from "../services/fleet/jobs/JobWorker.js"
import { RemoteCtl } from "../services/fleet/RemoteCtl.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { singleRunnerFromConfig } from "../services/platform/Cluster.js"
import { migrationsLayer, sqliteFromConfig } from "../services/platform/Database.js"
import { HostChannelLive } from "../services/platform/hostchannel/ChannelLive.js"
import { EmbeddedVaultLayer } from "../services/platform/vault/EmbeddedVault.js"
import { AllMigrations } from "./Migrations.js"
import { ObjectStoreLive } from "./Objects.js"
import { DomainServices } from "./Services.js"

/** The embedded SQLite database of the data dir, migrated before anything reads it. */
export const SqlLive = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(sqliteFromConfig))

/** The database without its migrations: for `ctl db migrate`, which applies them itself. */
export const SqliteUnmigratedLive = sqliteFromConfig.pipe(Layer.provideMerge(AppConfig.Default))

/** Every domain service on the embedded defaults. No actor runtime: safe for one-shot CLI commands. */
export const ServicesLive = DomainServices.pipe(
  Layer.provideMerge(EmbeddedVaultLayer),
  Layer.provideMerge(ObjectStoreLive),
  Layer.provideMerge(SqlLive),
  Layer.provideMerge(AppConfig.Default)
)

/** Services plus the host channel: for commands that reach hosts (`ctl host exec|health|inventory`, jobs). */
export const HostOpsLive = Layer.mergeAll(
  JobWorker.Default,
  Gates.Default,
  RemoteCtl.Default,
  Janitor.Default.pipe(Layer.provide(DiskMeter.Live))
).pipe(Layer.provideMerge(HostChannelLive), Layer.provideMerge(ServicesLive))

/** Services plus the janitor on the live disk meter: `ctl disk-cleanup` and `ctl space`. */
export const JanitorLive = Janitor.Default.pipe(Layer.provide(DiskMeter.Live), Layer.provideMerge(ServicesLive))

/** The entities this process hosts, on the single embedded runner. */
export const EntitiesLive = Layer.mergeAll(LeaseKeeperLive, MarketAgentLive).pipe(
  Layer.provideMerge(singleRunnerFromConfig)
)

/** Services plus the actor runtime: what a long-running server needs. */
export const AppLive = EntitiesLive.pipe(Layer.provideMerge(ServicesLive))
