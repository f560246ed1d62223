import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterWorkflowEngine, type Sharding } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import { Config, type ConfigError, Duration, Effect, Layer, Option } from "effect"
import { LeaseKeeperLive } from "../actors/LeaseKeeper.js"
import { MarketAgentLive } from "../actors/MarketAgent.js"
import { HandoffEngineInProcess } from "../actors/StorageHandoff.js"
import {
  type MemoryHostAgent as MemoryAgent,
  MemoryHostAgent,
  makeMemoryHostAgent
} from "../services/fleet/agent/HostAgentMemory.js"
import { TargetQueue } from "../services/fleet/control/handoff/TargetQueue.js"
import { RemoteCtl } from "../services/fleet/control/RemoteCtl.js"
import { MemoryAlerts, makeMemoryAlerts } from "../services/fleet/control/reconciler/Alerts.js"
import { HostUnitsLive, MemoryHostUnits, makeMemoryHostUnits } from "../services/fleet/control/reconciler/HostUnits.js"
import { ServiceReconciler } from "../services/fleet/control/reconciler/ServiceReconciler.js"
import { ServiceViews } from "../services/fleet/control/reconciler/ServiceViews.js"
import { HandoffQueueLocal } from "../services/fleet/shared/handoff/HandoffQueue.js"
import { MemoryServiceManager, makeMemoryServiceManager } from "../services/fleet/shared/units/MemoryServiceManager.js"
import { ServiceManager } from "../services/fleet/shared/units/ServiceManager.js"
import { Trades } from "../services/market/Trades.js"
import { AppConfig, type AppSettings } from "../services/platform/AppConfig.js"
import { singleRunner } from "../services/platform/Cluster.js"
import { type DatabaseUnavailable, migrationsLayer, sqliteMemory } from "../services/platform/Database.js"
import { HostChannelLive } from "../services/platform/hostchannel/ChannelLive.js"
import type { HostChannel } from "../services/platform/hostchannel/HostChannel.js"
import { LocalExecHostChannel } from "../services/platform/hostchannel/LocalExecChannel.js"
import {
  type MemoryHostChannel as MemoryChannel,
  MemoryHostChannel,
  makeMemoryHostChannel
} from "../services/platform/hostchannel/MemoryHostChannel.js"
import type { Notifier } from "../services/platform/notify/Notifier.js"
import { MemoryObjectStoreLayer } from "../services/platform/objects/MemoryObjectStore.js"
import { pgScratchSchema } from "../services/platform/PgScratchSchema.js"
import type { SqlDialect } from "../services/platform/sql/SqlDialect.js"
import { embeddedVault } from "../services/platform/vault/EmbeddedVault.js"
import { HostAgentLive, storageReconcileOn } from "./HostAgent.js"
import { AllMigrations } from "./Migrations.js"
import {
  DomainServices,
  HandoffWorkflowsLive,
  HostReach,
  ReconcilerServices,
  ServedRegistry,
  WorkflowsLive
} from "./Services.js"
import { SqlFileLive, type SqlLive } from "./Sql.js"

export const testSettings = (overrides: Partial<AppSettings> = {}): AppSettings => ({
  dataDir: "/nonexistent/keel-test",
  databaseFile: ":memory:",
  databaseUrl: Option.none(),
  databasePool: 4,
  databaseConnectTimeout: Duration.seconds(5),
  httpHost: "127.0.0.1",
  httpPort: 0,
  bodyLimitBytes: 1024 * 1024,
  shutdownGrace: Duration.seconds(5),
  logFormat: "json",
  logLevel: "warning",
  demoData: false,
  sqliteCacheMb: 16,
  sqliteMmapMb: 0,
  sqliteSynchronous: "normal",
  sqliteBusyTimeout: Duration.seconds(10),
  tracing: true,
  clusterPollInterval: Duration.millis(100),
  requestLog: false,
  ...overrides
})

/**
 * Settings for tests and embedders: an in-memory database. What can only be files (the ground truth's git
 * mirrors, a janitor's state) goes to `dataDir`: without one given, a fresh temporary directory removed when
 * the layer is released (never a fixed path: a process running as root would create it).
 */
export const AppConfigTest = (overrides: Partial<AppSettings> = {}) =>
  overrides.dataDir !== undefined
    ? Layer.succeed(AppConfig, AppConfig.make(testSettings(overrides)))
    : Layer.scoped(
        AppConfig,
        Effect.map(
          Effect.acquireRelease(
            Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "keel-test-"))),
            (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
          ),
          (dataDir) => AppConfig.make(testSettings({ ...overrides, dataDir }))
        )
      )

/**
 * KEEL_TEST_DATABASE_URL (`npm run test:pg`, CI's second run): the test layers' database is PostgreSQL there, a
 * fresh schema per layer (`pgScratchSchema`), instead of in-memory SQLite. A test-only setting: a server never
 * reads it.
 */
export const testDatabaseUrl = Config.option(Config.redacted("KEEL_TEST_DATABASE_URL"))

/**
 * A database of the test's own, empty: in-memory SQLite, or with KEEL_TEST_DATABASE_URL a PostgreSQL schema of
 * its own in that database (dropped when the layer is released). Either way a fresh one per layer built, so tests
 * and test files never see each other's rows.
 */
export const TestDatabase: Layer.Layer<
  SqlClient.SqlClient | SqlDialect | Notifier,
  ConfigError.ConfigError | DatabaseUnavailable
> = Layer.unwrapEffect(
  Effect.map(testDatabaseUrl, (url) =>
    Option.match(url, {
      onNone: (): Layer.Layer<SqlClient.SqlClient | SqlDialect | Notifier, DatabaseUnavailable> => sqliteMemory,
      onSome: (url) => pgScratchSchema({ url })
    })
  )
)

/** Real SQLite in memory (or PostgreSQL with KEEL_TEST_DATABASE_URL: `TestDatabase`), every migration applied. */
export const SqlTest = migrationsLayer(AllMigrations).pipe(Layer.provideMerge(TestDatabase))

/**
 * The test database, or the file a test names (opened like the server's, so it can fail like it). A named file
 * is SQLite on either run: such a test is about the file (its modes, the hot connection, another process on it).
 */
const testDatabase = (
  file: string
): Layer.Layer<Layer.Layer.Success<typeof SqlLive>, ConfigError.ConfigError | DatabaseUnavailable, AppConfig> =>
  file === ":memory:" ? SqlTest : SqlFileLive

/** The embedded vault on the test database, sealed under a key made for this process (no key file). */
export const VaultTest = embeddedVault({ masterKey: new Uint8Array(randomBytes(32)) })

/**
 * The domain services on the test database: in memory, or on the file `databaseFile` names (what the server
 * runs on, the hot paths' second connection included).
 */
export const ServicesTest = (overrides: Partial<AppSettings> = {}) =>
  DomainServices.pipe(
    Layer.provideMerge(VaultTest),
    Layer.provideMerge(MemoryObjectStoreLayer),
    Layer.provideMerge(testDatabase(overrides.databaseFile ?? ":memory:")),
    Layer.provideMerge(AppConfigTest(overrides))
  )

/** The single runner with test-speed intervals (messages polled every 100 ms, no termination wait). */
export const ClusterTest = singleRunner({ pollInterval: "100 millis", runnerStorage: "memory", terminationTimeout: 0 })

/**
 * The whole application on test adapters. `marketAgent` replaces the tickers' actor (e.g. one that never answers, to
 * reach the trade's wait bound); it must register the `MarketAgent` entity as `MarketAgentLive` does.
 */
export const AppTest = (
  overrides: Partial<AppSettings> = {},
  actors: { readonly marketAgent?: Layer.Layer<never, never, Sharding.Sharding> } = {}
) =>
  Layer.mergeAll(
    LeaseKeeperLive,
    actors.marketAgent ?? MarketAgentLive,
    Trades.Default,
    WorkflowsLive,
    ReconcilerServices
  ).pipe(
    Layer.provideMerge(ClusterTest),
    Layer.provideMerge(HostReach),
    Layer.provideMerge(ServedRegistry),
    Layer.provideMerge(ServicesTest(overrides))
  )

/**
 * The application graph with the host-facing ports on their test adapters: units come from a memory service
 * manager the test controls (`makeMemoryServiceManager().set(…)`), not from this machine's systemd.
 */
export const HostOpsTest = (
  overrides: Partial<AppSettings> = {},
  services: ReturnType<typeof makeMemoryServiceManager> = makeMemoryServiceManager()
) => Layer.merge(AppTest(overrides), MemoryServiceManager(services))

/**
 * The service reconciler on the test services, every host's units in memory (`makeMemoryHostUnits()`: one
 * memory service manager per target, the command stream across them) and alerts in a list.
 */
export const ReconcilerTest = (
  options: {
    readonly hosts?: ReturnType<typeof makeMemoryHostUnits>
    readonly alerts?: ReturnType<typeof makeMemoryAlerts>
    readonly overrides?: Partial<AppSettings>
  } = {}
) =>
  ServiceViews.Default.pipe(
    Layer.provideMerge(ServiceReconciler.Default),
    Layer.provideMerge(
      Layer.mergeAll(
        MemoryHostUnits(options.hosts ?? makeMemoryHostUnits()),
        MemoryAlerts(options.alerts ?? makeMemoryAlerts())
      )
    ),
    Layer.provideMerge(ServicesTest(options.overrides))
  )

/**
 * The service reconciler reaching hosts for real (`HostUnitsLive`: a local target through `manager`, others
 * through their channel) on the test services: e.g. with Keel's supervisor, a tick on real processes.
 */
export const ReconcilerOnHostsTest = (
  manager: ServiceManager["Type"],
  options: { readonly alerts?: ReturnType<typeof makeMemoryAlerts>; readonly overrides?: Partial<AppSettings> } = {}
) =>
  ServiceViews.Default.pipe(
    Layer.provideMerge(ServiceReconciler.Default),
    Layer.provideMerge(MemoryAlerts(options.alerts ?? makeMemoryAlerts())),
    Layer.provideMerge(HostUnitsLive),
    Layer.provideMerge(HostAgentLive),
    Layer.provideMerge(Layer.merge(Layer.succeed(ServiceManager, manager), RemoteCtl.Default)),
    Layer.provideMerge(HostChannelLive),
    Layer.provideMerge(ServicesTest(options.overrides))
  )

/**
 * The storage-root handoff's workflows on the test cluster, with units from a memory service manager the test
 * controls (the writers the handoff stops and starts), and other targets reached through `channel`.
 */
export const HandoffTest = (
  overrides: Partial<AppSettings> = {},
  services: ReturnType<typeof makeMemoryServiceManager> = makeMemoryServiceManager(),
  channel: Layer.Layer<HostChannel, never, Layer.Layer.Context<typeof HostChannelLive>> = HostChannelLive
) =>
  Layer.mergeAll(HandoffWorkflowsLive, storageReconcileOn(HandoffEngineInProcess), TargetQueue.Default).pipe(
    Layer.provideMerge(HandoffQueueLocal),
    Layer.provideMerge(ClusterWorkflowEngine.layer),
    Layer.provideMerge(ClusterTest),
    Layer.provideMerge(RemoteCtl.Default),
    Layer.provideMerge(channel),
    Layer.provideMerge(MemoryServiceManager(services)),
    Layer.provideMerge(ServicesTest(overrides))
  )

/**
 * The host channel in memory: every command answered by the test (`makeMemoryHostChannel(answer)`, by default an
 * empty exit 0) and recorded in `calls`, instead of a hand-rolled `Layer.succeed(HostChannel, …)`.
 */
export const HostChannelTest = (memory: MemoryChannel = makeMemoryHostChannel()) => MemoryHostChannel(memory)

/**
 * Each target's host agent in memory (`makeMemoryHostAgent()`: a memory service manager per target, endpoint
 * answers, silent hosts), with `HostUnits` on it: the control plane's side of the protocol without a process.
 */
export const HostAgentMemoryTest = (memory: MemoryAgent = makeMemoryHostAgent()) =>
  HostUnitsLive.pipe(Layer.provideMerge(MemoryHostAgent(memory)))
export { LocalExecHostChannel, makeMemoryHostChannel }

/**
 * Each target's host agent for real over a channel where every host is this machine (`LocalExecHostChannel`): a
 * remote target's operations run the real `ctl … --here --json` command line (KEEL_REMOTE_CTL) as a process here,
 * a `local` one runs in-process on `manager` — the host protocol's tests compare the two.
 */
export const HostAgentTest = (
  manager: ServiceManager["Type"],
  overrides: Partial<AppSettings> = {},
  channel: Layer.Layer<HostChannel> = LocalExecHostChannel
) =>
  HostAgentLive.pipe(
    Layer.provideMerge(Layer.merge(Layer.succeed(ServiceManager, manager), RemoteCtl.Default)),
    Layer.provideMerge(channel),
    Layer.provideMerge(ServicesTest(overrides))
  )
