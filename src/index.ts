/**
 * Keel as a library. Importing this module starts nothing and opens nothing: every resource
 * lives in a Layer that the embedder builds (see README "Embedding").
 */

export * from "./actors/AutonomyTicker.js"
// Actors
export * from "./actors/LeaseKeeper.js"
export * from "./actors/MarketAgent.js"
export * from "./actors/StorageHandoff.js"
// The CLI tree, for embedding `ctl` commands in another program
export { ctl, runCtl } from "./cli/Cli.js"
export { type CommandNode, commandTree } from "./cli/Help.js"
export { ctlMain, exitCodeOf, unknownCommand } from "./cli/Run.js"
// HTTP contracts, shared middleware and typed clients
export * from "./http/BodyLimit.js"
export * from "./http/ClientError.js"
export * from "./http/Clients.js"
export { ControlPlaneApi, HostHealthApi, StoredBeaconAnswer } from "./http/controlplane/Api.js"
export {
  GroundTruthApi,
  GroundTruthAskApi,
  GroundTruthAssetsApi,
  GroundTruthAuth,
  GroundTruthIngestApi,
  GroundTruthReadApi
} from "./http/groundtruth/Api.js"
export { HealthApi } from "./http/Health.js"
export {
  AgentDetail,
  AgentSummary,
  AgentsApi,
  Caller,
  ChatApi,
  CoinApi,
  CoinHistoryResult,
  MarketGate,
  MarketplaceApi,
  StreamApi,
  TokensApi,
  WalletAddress
} from "./http/marketplace/Api.js"
export { endpointClass, MarketGateLive } from "./http/marketplace/Gate.js"
export * from "./http/Problem.js"
export { errorClasses, PLATFORM_CODES, problemAwareClient, problemOpenApi } from "./http/ProblemContract.js"
export {
  AdminAuth,
  AnalyticsApi,
  BlogApi,
  ClientKeyHeader,
  ExperimentsApi,
  OnboardingApi,
  ProductApi
} from "./http/product/Api.js"
export * from "./http/Surfaces.js"
export { TokenAnswer, VaultApi, VaultNoStore, VaultTokensApi } from "./http/vault/Api.js"
// Layers
export * from "./layers/DemoSeeds.js"
export * from "./layers/Http.js"
export * from "./layers/Live.js"
export * from "./layers/Migrations.js"
export * from "./layers/Objects.js"
export * from "./layers/Server.js"
export * from "./layers/Services.js"
export * from "./layers/Test.js"
export * from "./services/fleet/beacon/Beacon.js"
export * from "./services/fleet/beacon/BeaconPublisher.js"
export * from "./services/fleet/beacon/BeaconUnits.js"
export * from "./services/fleet/beacon/BeaconWriter.js"
export * from "./services/fleet/beacon/HostHealth.js"
export * from "./services/fleet/beacon/HostStatePublisher.js"
// Fleet services
export * from "./services/fleet/Channels.js"
export * from "./services/fleet/gates/Gates.js"
export * from "./services/fleet/grants/ActionAuthority.js"
export * from "./services/fleet/grants/Errors.js"
export * from "./services/fleet/grants/GrantIssuer.js"
export * from "./services/fleet/handoff/HandoffEngine.js"
export * from "./services/fleet/handoff/HandoffFiles.js"
export * from "./services/fleet/handoff/HandoffQueue.js"
export * from "./services/fleet/handoff/HandoffQueueRemote.js"
export * from "./services/fleet/handoff/StorageReconcile.js"
export * from "./services/fleet/handoff/TreeManifest.js"
export * from "./services/fleet/handoff/TreeUnion.js"
export * from "./services/fleet/janitor/BackupTwins.js"
export * from "./services/fleet/janitor/BuildCaches.js"
export * from "./services/fleet/janitor/ChromiumClones.js"
export * from "./services/fleet/janitor/Cleaners.js"
export * from "./services/fleet/janitor/DiskMeter.js"
export * from "./services/fleet/janitor/HuggingfaceCache.js"
export * from "./services/fleet/janitor/Janitor.js"
export * from "./services/fleet/janitor/JanitorLock.js"
export * from "./services/fleet/janitor/JanitorUnits.js"
export * from "./services/fleet/janitor/Protection.js"
export * from "./services/fleet/janitor/QueueWorkdirs.js"
export * from "./services/fleet/janitor/Recordings.js"
export * from "./services/fleet/janitor/SafeRemove.js"
export * from "./services/fleet/janitor/ScanBudget.js"
export * from "./services/fleet/jobs/FailureTable.js"
export * from "./services/fleet/jobs/JobQueue.js"
export * from "./services/fleet/jobs/JobWorker.js"
export { fleetMigrations } from "./services/fleet/migrations.js"
export * from "./services/fleet/objects/ObjectAccess.js"
export * from "./services/fleet/objects/ObjectApiClient.js"
export * from "./services/fleet/overview/FleetHosts.js"
export * from "./services/fleet/overview/Overview.js"
export * from "./services/fleet/RemoteCtl.js"
export * from "./services/fleet/reconciler/Alerts.js"
export * from "./services/fleet/reconciler/AutonomyControl.js"
export * from "./services/fleet/reconciler/Decision.js"
export * from "./services/fleet/reconciler/FleetEvidence.js"
export * from "./services/fleet/reconciler/HostUnits.js"
export * from "./services/fleet/reconciler/ServiceReconciler.js"
export * from "./services/fleet/reconciler/ServiceReport.js"
export * from "./services/fleet/reconciler/ServiceViews.js"
export * from "./services/fleet/registry/Registry.js"
export * from "./services/fleet/registry/RegistryWriter.js"
export * from "./services/fleet/registry/Schema.js"
export * from "./services/fleet/releases/ArchiveEntry.js"
export * from "./services/fleet/releases/BinaryRecovery.js"
export * from "./services/fleet/releases/CanonicalJson.js"
export * from "./services/fleet/releases/CatalogMaintenance.js"
export * from "./services/fleet/releases/ReleaseAuthority.js"
export * from "./services/fleet/releases/ReleaseCatalog.js"
export * from "./services/fleet/releases/ReleaseManifest.js"
export * from "./services/fleet/releases/ReleasePublisher.js"
export * from "./services/fleet/releases/ReleaseReaders.js"
export * from "./services/fleet/releases/RunRecords.js"
export * from "./services/fleet/releases/SourceArchive.js"
export * from "./services/fleet/releases/VersionDeclaration.js"
export * from "./services/fleet/UnitSettings.js"
export * from "./services/fleet/units/Launchd.js"
export * from "./services/fleet/units/MemoryServiceManager.js"
export * from "./services/fleet/units/ServiceManager.js"
export * from "./services/fleet/units/ServiceManagerLive.js"
export * from "./services/fleet/units/Supervisor.js"
export * from "./services/fleet/units/Systemd.js"
export * from "./services/fleet/units/UnitRender.js"
// Ground-truth services
export * from "./services/groundtruth/Answerer.js"
export * from "./services/groundtruth/BrandAssets.js"
export * from "./services/groundtruth/Chunker.js"
export * from "./services/groundtruth/GtConfig.js"
export * from "./services/groundtruth/Ingester.js"
export { groundTruthMigrations } from "./services/groundtruth/migrations.js"
export * from "./services/groundtruth/Retriever.js"
export * from "./services/groundtruth/Sources.js"
// Marketplace services
export * from "./services/market/Agents.js"
export * from "./services/market/ApiKeys.js"
export * from "./services/market/BondingCurve.js"
export * from "./services/market/Chat.js"
export * from "./services/market/CoinPrice.js"
export { demoCredentialsFile } from "./services/market/DemoData.js"
export * from "./services/market/Errors.js"
export * from "./services/market/Ledger.js"
export * from "./services/market/MarketConfig.js"
export * from "./services/market/MarketEvents.js"
export { marketMigrations } from "./services/market/migrations.js"
export * from "./services/market/TokenBoard.js"
export * from "./services/market/TokenMarket.js"
export * from "./services/market/Trading.js"
export * from "./services/market/Units.js"
export * from "./services/market/WalletAuth.js"
export * from "./services/market/WalletSignature.js"
// Platform services
export * from "./services/platform/AppConfig.js"
export * from "./services/platform/ChildEnv.js"
export * from "./services/platform/Cluster.js"
export * from "./services/platform/Credentials.js"
export * from "./services/platform/Database.js"
export * from "./services/platform/DemoData.js"
export * from "./services/platform/Digest.js"
export * from "./services/platform/GitMirror.js"
export * from "./services/platform/Health.js"
export * from "./services/platform/hostchannel/ChannelLive.js"
export * from "./services/platform/hostchannel/HostChannel.js"
export { runProcess } from "./services/platform/hostchannel/Process.js"
export * from "./services/platform/JsonNumbers.js"
export * from "./services/platform/Leases.js"
export * from "./services/platform/Logging.js"
export { platformMigrations } from "./services/platform/migrations/platform.js"
export * from "./services/platform/Net.js"
export * from "./services/platform/objects/FsObjectStore.js"
export * from "./services/platform/objects/MemoryObjectStore.js"
export * from "./services/platform/objects/ObjectGateway.js"
export * from "./services/platform/objects/ObjectStore.js"
export * from "./services/platform/objects/RoutedFsObjectStore.js"
export * from "./services/platform/objects/SqlObjectStore.js"
export * from "./services/platform/objects/StorageFence.js"
export { packageExample, packageRoot, packageVersion } from "./services/platform/Package.js"
export * from "./services/platform/Shutdown.js"
export * from "./services/platform/SqlDirect.js"
export * from "./services/platform/TrustedProxies.js"
export * as Ed25519 from "./services/platform/vault/Ed25519.js"
export * from "./services/platform/vault/EmbeddedVault.js"
export * from "./services/platform/vault/ItemInput.js"
export * from "./services/platform/vault/Vault.js"
export { loadOrCreateKeyFile, parseMasterKey } from "./services/platform/vault/VaultCipher.js"
// Product-client services
export * from "./services/product/AdminTokens.js"
export * from "./services/product/Assigner.js"
export * from "./services/product/Blog.js"
export * from "./services/product/BlogSource.js"
export * from "./services/product/Collector.js"
export * from "./services/product/Hashing.js"
export * from "./services/product/JourneyRegistry.js"
export { productMigrations } from "./services/product/migrations.js"
export * from "./services/product/Onboarding.js"
export * from "./services/product/ProductConfig.js"
export * from "./services/product/Readout.js"
export * from "./services/product/ReadoutSchemas.js"
export * from "./services/product/ReadoutSql.js"
export * from "./services/product/Stats.js"
