import { ClusterWorkflowEngine } from "@effect/cluster"
import { Effect, Layer } from "effect"
import { FleetProbeLive } from "../actors/FleetProbe.js"
import { ReleaseRunWorkflowLive } from "../actors/ReleaseRunWorkflow.js"
import { HandoffEngineInProcess, StorageHandoffLive, StorageHandoffRollbackLive } from "../actors/StorageHandoff.js"
import { HandoffSteps } from "../services/fleet/agent/handoff/HandoffSteps.js"
import { ServiceManagerLive } from "../services/fleet/agent/units/ServiceManagerLive.js"
import { HostHealth } from "../services/fleet/control/beacon/HostHealth.js"
import { Gates } from "../services/fleet/control/gates/Gates.js"
import { ActionAuthority } from "../services/fleet/control/grants/ActionAuthority.js"
import { GrantIssuer } from "../services/fleet/control/grants/GrantIssuer.js"
import { HostAgentLive } from "../services/fleet/control/HostAgentLive.js"
import { StorageReconcile } from "../services/fleet/control/handoff/StorageReconcile.js"
import { TargetQueue } from "../services/fleet/control/handoff/TargetQueue.js"
import { JobDiagnosis } from "../services/fleet/control/jobs/JobDiagnosis.js"
import { ObjectAccess } from "../services/fleet/control/objects/ObjectAccess.js"
import { FleetHosts } from "../services/fleet/control/overview/FleetHosts.js"
import { Overview } from "../services/fleet/control/overview/Overview.js"
import { HostProbe } from "../services/fleet/control/probe/HostProbe.js"
import { ProbeRuns } from "../services/fleet/control/probe/ProbeRuns.js"
import { ProviderProfile } from "../services/fleet/control/providers/ProviderProfile.js"
import { RemoteCtl } from "../services/fleet/control/RemoteCtl.js"
import { AlertsLive } from "../services/fleet/control/reconciler/Alerts.js"
import { AutonomyControl } from "../services/fleet/control/reconciler/AutonomyControl.js"
import { HostUnitsLive } from "../services/fleet/control/reconciler/HostUnits.js"
import { ServiceReconciler } from "../services/fleet/control/reconciler/ServiceReconciler.js"
import { ServiceViews } from "../services/fleet/control/reconciler/ServiceViews.js"
import { AuthorityRegistry } from "../services/fleet/control/registry/AuthorityRegistry.js"
import { RegistryWriter } from "../services/fleet/control/registry/RegistryWriter.js"
import { CatalogMaintenance } from "../services/fleet/control/releases/CatalogMaintenance.js"
import { ReleaseAuthority } from "../services/fleet/control/releases/ReleaseAuthority.js"
import { ReleaseCatalog } from "../services/fleet/control/releases/ReleaseCatalog.js"
import { ReleasePublisher } from "../services/fleet/control/releases/ReleasePublisher.js"
import { ReleaseRun } from "../services/fleet/control/releases/ReleaseRun.js"
import { RunCopies } from "../services/fleet/control/releases/RunCopies.js"
import { RunHandover } from "../services/fleet/control/releases/RunHandover.js"
import { VersionDeclaration } from "../services/fleet/control/releases/VersionDeclaration.js"
import { FleetConfig } from "../services/fleet/shared/FleetConfig.js"
import { HandoffQueueLocal } from "../services/fleet/shared/handoff/HandoffQueue.js"
import { JobQueue } from "../services/fleet/shared/jobs/JobQueue.js"
import { FleetRegistry } from "../services/fleet/shared/registry/Registry.js"
import { RunRecords } from "../services/fleet/shared/releases/RunRecords.js"
import { Answerer } from "../services/groundtruth/Answerer.js"
import { BrandAssets } from "../services/groundtruth/BrandAssets.js"
import { EmbedderFromConfig } from "../services/groundtruth/Embedder.js"
import { GtConfig } from "../services/groundtruth/GtConfig.js"
import { Ingester } from "../services/groundtruth/Ingester.js"
import { Retriever } from "../services/groundtruth/Retriever.js"
import { Sources } from "../services/groundtruth/Sources.js"
import { Agents } from "../services/market/Agents.js"
import { ApiKeys } from "../services/market/ApiKeys.js"
import { Chat } from "../services/market/Chat.js"
import { CoinIssuance } from "../services/market/CoinIssuance.js"
import { CoinHistory, CoinPriceSource } from "../services/market/CoinPrice.js"
import { Ledger } from "../services/market/Ledger.js"
import { MarketConfig } from "../services/market/MarketConfig.js"
import { MarketEvents } from "../services/market/MarketEvents.js"
import { RateLimits } from "../services/market/RateLimits.js"
import { TokenBoard } from "../services/market/TokenBoard.js"
import { TokenMarket } from "../services/market/TokenMarket.js"
import { Trading } from "../services/market/Trading.js"
import { WalletAuth } from "../services/market/WalletAuth.js"
import { Database } from "../services/platform/Database.js"
import { FaultInjectorFromTestSettings } from "../services/platform/FaultInjector.js"
import { Health } from "../services/platform/Health.js"
import { HostChannelLive } from "../services/platform/hostchannel/ChannelLive.js"
import { Leases } from "../services/platform/Leases.js"
import { LoopbackTrust } from "../services/platform/LoopbackTrust.js"
import { ObjectGateway } from "../services/platform/objects/ObjectGateway.js"
import { StorageFenceLive } from "../services/platform/objects/StorageFence.js"
import { Shutdown } from "../services/platform/Shutdown.js"
import { TrustedProxies } from "../services/platform/TrustedProxies.js"
import { AdminTokens } from "../services/product/AdminTokens.js"
import { Assigner } from "../services/product/Assigner.js"
import { Blog } from "../services/product/Blog.js"
import { Collector } from "../services/product/Collector.js"
import { JourneyRegistry } from "../services/product/JourneyRegistry.js"
import { Onboarding } from "../services/product/Onboarding.js"
import { ProductConfig } from "../services/product/ProductConfig.js"
import { Readout } from "../services/product/Readout.js"

/** The marketplace: the ledger under the curves, agents, chat and its stream, auth, the coin's price. */
export const MarketServices = Layer.mergeAll(
  Trading.Default,
  TokenBoard.Default,
  ApiKeys.Default,
  WalletAuth.Default,
  CoinHistory.Default,
  CoinIssuance.Default,
  RateLimits.Default
).pipe(
  Layer.provideMerge(Agents.Default),
  Layer.provideMerge(Chat.Default),
  Layer.provideMerge(MarketEvents.Default),
  Layer.provideMerge(CoinPriceSource.AdminSet),
  Layer.provideMerge(TokenMarket.Default),
  Layer.provideMerge(Ledger.Default),
  Layer.provideMerge(MarketConfig.Default),
  Layer.provideMerge(Shutdown.Default)
)

/**
 * Every domain service, wired to each other. It still needs a migrated SqlClient, AppConfig and an ObjectStore:
 * Live gives the data dir's SQLite file and the environment, Test an in-memory database and fixed settings.
 */
export const DomainServices = Layer.mergeAll(
  Health.Default,
  TrustedProxies.Default,
  LoopbackTrust.Default,
  Leases.Default,
  Collector.Default,
  Onboarding.Default,
  Blog.Default,
  Readout.Default,
  AdminTokens.Default,
  Ingester.Default,
  Answerer.Default,
  BrandAssets.Default,
  MarketServices,
  HostHealth.Default,
  ObjectAccess.Default,
  FleetHosts.Default,
  GrantIssuer.Default,
  Overview.Default,
  AutonomyControl.Default,
  CatalogMaintenance.Default,
  ReleaseRun.Default,
  RunCopies.Default,
  VersionDeclaration.Default,
  JobDiagnosis.Default
).pipe(
  Layer.provideMerge(ReleasePublisher.Default),
  Layer.provideMerge(RunRecords.Default),
  Layer.provideMerge(RegistryWriter.Default),
  Layer.provideMerge(ReleaseCatalog.Default),
  Layer.provideMerge(ReleaseAuthority.Default),
  Layer.provideMerge(ProviderProfile.Default),
  Layer.provideMerge(JobQueue.Default),
  Layer.provideMerge(ActionAuthority.DefaultWithoutDependencies),
  Layer.provideMerge(AuthorityRegistry.Default),
  Layer.provideMerge(FleetRegistry.Default),
  Layer.provideMerge(ObjectGateway.Default),
  Layer.provideMerge(StorageFenceLive),
  Layer.provideMerge(Retriever.Default),
  Layer.provideMerge(EmbedderFromConfig),
  Layer.provideMerge(Sources.Default),
  Layer.provideMerge(GtConfig.Default),
  Layer.provideMerge(Assigner.Default),
  Layer.provideMerge(JourneyRegistry.Default),
  Layer.provideMerge(Layer.merge(ProductConfig.Default, FleetConfig.Default)),
  Layer.provideMerge(Database.Default)
)

/**
 * A long-running server's registry: from now on every `FleetRegistry.read` in the process (request handlers,
 * workflows, the reconciler) answers the snapshot authorization holds, refreshed in the background — one source,
 * bounded staleness, no request waiting on git (docs/control-plane.md). One-shot commands do not install it: they
 * read the source.
 */
export const ServedRegistry = Layer.effectDiscard(
  Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const held = yield* AuthorityRegistry
    yield* registry.serveFromHeld(held)
  })
)

/**
 * What reaches hosts: the host channel (local processes, ssh with vault identities), gates, `RemoteCtl`, each
 * target's host agent (`HostAgent`: this host in-process, the others through their `ctl`) and the service manager
 * of this host (systemd or launchd).
 * The server has it too (issue 15: fleet work runs in `ctl serve`), not only the CLI's host commands.
 */
export const HostReach = HostUnitsLive.pipe(
  Layer.provideMerge(HostAgentLive),
  Layer.provideMerge(Layer.mergeAll(Gates.Default, RemoteCtl.Default, ServiceManagerLive)),
  Layer.provideMerge(HostChannelLive)
)

/**
 * The service reconciler with its alert log (and webhook): on the domain services and the reach to hosts
 * (`HostUnits`), which the graph gives it — live in `ctl serve` and `ctl optimize|service`, memory in tests.
 */
export const ReconcilerServices = ServiceViews.Default.pipe(
  Layer.provideMerge(ServiceReconciler.Default),
  Layer.provide(AlertsLive)
)

/**
 * The storage-root handoff's workflows with their steps. Fault injection is built from its test-only settings
 * (no-op unless KEEL_FAULT_INJECTION=1): the crash tests run real `ctl` processes.
 */
export const HandoffWorkflowsLive = Layer.mergeAll(StorageHandoffLive, StorageHandoffRollbackLive).pipe(
  Layer.provide(HandoffSteps.Default),
  Layer.provide(FaultInjectorFromTestSettings)
)

/**
 * The durable workflows (FleetProbe) on the cluster's workflow engine: their state and messages live in the
 * same SQL database as the entities', so a run survives a kill -9 and resumes when the server restarts.
 */
export const WorkflowsLive = Layer.mergeAll(
  FleetProbeLive.pipe(Layer.provide(HostProbe.Default)),
  ProbeRuns.Default,
  ReleaseRunWorkflowLive,
  RunHandover.Default,
  HandoffWorkflowsLive,
  StorageReconcile.Default.pipe(Layer.provide(HandoffEngineInProcess)),
  TargetQueue.Default
).pipe(Layer.provideMerge(HandoffQueueLocal), Layer.provideMerge(ClusterWorkflowEngine.layer))
