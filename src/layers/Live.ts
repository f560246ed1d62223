import * as fs from "node:fs"
import { type ConfigError, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { LeaseKeeperLive } from "../actors/LeaseKeeper.js"
import { MarketAgentLive } from "../actors/MarketAgent.js"
import { HostStatePublisher } from "../services/fleet/agent/beacon/HostStatePublisher.js"
import { DiskMeter } from "../services/fleet/agent/janitor/DiskMeter.js"
import { Janitor } from "../services/fleet/agent/janitor/Janitor.js"
import { JobWorker } from "../services/fleet/agent/jobs/JobWorker.js"
import { RunnerGateway } from "../services/fleet/agent/runners/RunnerGateway.js"
import { RunnerUnit } from "../services/fleet/agent/runners/RunnerUnit.js"
import { ServiceManagerLive } from "../services/fleet/agent/units/ServiceManagerLive.js"
import { Gates } from "../services/fleet/control/gates/Gates.js"
import { RemoteCtl } from "../services/fleet/control/RemoteCtl.js"
import { BinaryRecovery } from "../services/fleet/control/releases/BinaryRecovery.js"
import { ReleaseRollout } from "../services/fleet/control/releases/ReleaseRollout.js"
import { TagRelease } from "../services/fleet/control/releases/TagRelease.js"
import { GithubRunnerProvider } from "../services/fleet/control/runners/GithubRunnerProvider.js"
import { PrecheckRunner } from "../services/fleet/control/runners/PrecheckRunner.js"
import { RunnerHost } from "../services/fleet/control/runners/RunnerHost.js"
import { FleetConfig } from "../services/fleet/shared/FleetConfig.js"
import { Trades } from "../services/market/Trades.js"
import { AppConfig } from "../services/platform/AppConfig.js"
import { clusterFromConfig } from "../services/platform/Cluster.js"
import { type DatabaseUnavailable, migrationsLayer, sqliteMemory } from "../services/platform/Database.js"
import { HostChannelLive } from "../services/platform/hostchannel/ChannelLive.js"
import { EmbeddedVaultLayer } from "../services/platform/vault/EmbeddedVault.js"
import { AllMigrations } from "./Migrations.js"
import { ObjectStoreLive } from "./Objects.js"
import { DomainServices, HostReach, ReconcilerServices, ServedRegistry, WorkflowsLive } from "./Services.js"
import { SqlLive } from "./Sql.js"

/**
 * For previews (`--dry-run`), which must create nothing: the configured database when it exists (a PostgreSQL
 * server always does), else an empty in-memory one with the same migrations (a database that does not exist holds
 * no jobs).
 */
export const SqlPreview = Layer.unwrapEffect(
  Effect.map(
    AppConfig,
    (
      config
    ): Layer.Layer<Layer.Layer.Success<typeof SqlLive>, ConfigError.ConfigError | DatabaseUnavailable, AppConfig> =>
      Option.isSome(config.databaseUrl) || (config.databaseFile !== ":memory:" && fs.existsSync(config.databaseFile))
        ? SqlLive
        : migrationsLayer(AllMigrations).pipe(
            Layer.provideMerge(sqliteMemory),
            // Migrating a throwaway database is not news.
            Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
          )
  )
)

const servicesOn = <E, R>(sql: Layer.Layer<Layer.Layer.Success<typeof SqlLive>, E, R>) =>
  DomainServices.pipe(
    Layer.provideMerge(EmbeddedVaultLayer),
    Layer.provideMerge(ObjectStoreLive),
    Layer.provideMerge(sql),
    Layer.provideMerge(AppConfig.Default)
  )

/** The fleet's settings alone: for commands that only reach the control plane (`ctl fleet …`, `release build`). */
export const FleetConfigLive = FleetConfig.Default.pipe(Layer.provideMerge(AppConfig.Default))

/** Every domain service on the embedded defaults. No actor runtime: safe for one-shot CLI commands. */
export const ServicesLive = servicesOn(SqlLive)

/** Services plus the host channel: for commands that reach hosts (`ctl host exec|health|inventory`, jobs). */
export const HostOpsLive = Layer.mergeAll(JobWorker.Default, Janitor.Default.pipe(Layer.provide(DiskMeter.Live))).pipe(
  Layer.provideMerge(HostReach),
  Layer.provideMerge(ServicesLive)
)

/** Services plus the janitor on the live disk meter: `ctl disk-cleanup` and `ctl space`. */
export const JanitorLive = Janitor.Default.pipe(Layer.provide(DiskMeter.Live), Layer.provideMerge(ServicesLive))

/** What a host's agent publishes through the control plane: `ctl host publish-state`. */
export const HostStateLive = HostStatePublisher.Default.pipe(Layer.provideMerge(JanitorLive))

/** The janitor for a preview: the same graph on `SqlPreview`, so a dry run creates no database. */
export const JanitorPreviewLive = Janitor.Default.pipe(
  Layer.provide(DiskMeter.Live),
  Layer.provideMerge(servicesOn(SqlPreview))
)

/** `HostOpsLive` for a preview (`ctl space reclaim --dry-run`): nothing created on disk. */
export const HostOpsPreviewLive = Layer.mergeAll(
  JobWorker.Default,
  Gates.Default,
  RemoteCtl.Default,
  Janitor.Default.pipe(Layer.provide(DiskMeter.Live))
).pipe(Layer.provideMerge(HostChannelLive), Layer.provideMerge(servicesOn(SqlPreview)))

/**
 * The entities and durable workflows this process hosts: on the single embedded runner, or as one of several runners
 * on one PostgreSQL database (KEEL_CLUSTER_MODE; docs/cluster.md).
 */
export const EntitiesLive = Layer.mergeAll(LeaseKeeperLive, MarketAgentLive, Trades.Default, WorkflowsLive).pipe(
  Layer.provideMerge(clusterFromConfig)
)

/** Services plus the actor runtime and the reach to hosts: what a long-running server needs. */
export const AppLive = Layer.merge(EntitiesLive, ReconcilerServices).pipe(
  Layer.provideMerge(HostReach),
  Layer.provideMerge(ServedRegistry),
  Layer.provideMerge(ServicesLive)
)

/** The service reconciler for `ctl optimize` and `ctl service`: the host reach and the services, no actors. */
export const ReconcilerOpsLive = ReconcilerServices.pipe(Layer.provideMerge(HostOpsLive))

/** `ctl host recover`: binary recovery through the raw host channel, and the host recovery's units. */
export const RecoveryLive = BinaryRecovery.Default.pipe(Layer.provideMerge(HostOpsLive))

/** `ctl release promote|rollout`: the release agent — declaration, delivery, the services converged. */
export const RolloutLive = ReleaseRollout.Default.pipe(
  Layer.provideMerge(BinaryRecovery.Default),
  Layer.provideMerge(ReconcilerOpsLive)
)

/** `ctl release tag`: the repository tag adapter, over submit and the release agent. */
export const TagLive = TagRelease.Default.pipe(Layer.provideMerge(RolloutLive))

/** `ctl host precheck-runner`: the lifecycle on the control plane — GitHub, the vault, the runner's host. */
export const PrecheckRunnerLive = PrecheckRunner.Default.pipe(
  Layer.provide(Layer.merge(RunnerHost.Default, GithubRunnerProvider)),
  Layer.provideMerge(HostOpsLive)
)

/** `ctl host precheck-runner unit … --here`: the runner's unit through this host's service manager. */
export const RunnerUnitLive = RunnerUnit.Default.pipe(
  Layer.provide(ServiceManagerLive),
  Layer.provideMerge(ServicesLive)
)

/** `ctl host gateway`: the pre-check runner's gateway, over the registry. */
export const GatewayLive = RunnerGateway.Default.pipe(Layer.provideMerge(ServicesLive))
