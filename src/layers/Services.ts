import { ClusterWorkflowEngine } from "@effect/cluster"
import { Effect, Layer } from "effect"
import { FleetProbeLive } from "../actors/FleetProbe.js"
import { ReleaseRunWorkflowLive } from "../actors/ReleaseRunWorkflow.js"
import { HandoffEngineInProcess, StorageHandoffLive, StorageHandoffRollbackLive } from "../actors/StorageHandoff.js"
import { HandoffSteps } from "../services/fleet/agent/handoff/HandoffSteps.js"
import { ServiceManagerLive } from "../services/fleet/agent/units/ServiceManagerLive.js"
import { Gates } from "../services/fleet/control/gates/Gates.js"
import { TargetQueue } from "../services/fleet/control/handoff/TargetQueue.js"
import { HostProbe } from "../services/fleet/control/probe/HostProbe.js"
import { ProbeRuns } from "../services/fleet/control/probe/ProbeRuns.js"
import { RemoteCtl } from "../services/fleet/control/RemoteCtl.js"
import { AlertsLive } from "../services/fleet/control/reconciler/Alerts.js"
import { HostUnitsLive } from "../services/fleet/control/reconciler/HostUnits.js"
import { ServiceReconciler } from "../services/fleet/control/reconciler/ServiceReconciler.js"
import { ServiceViews } from "../services/fleet/control/reconciler/ServiceViews.js"
import { AuthorityRegistry } from "../services/fleet/control/registry/AuthorityRegistry.js"
import { RunHandover } from "../services/fleet/control/releases/RunHandover.js"
import { HandoffQueueLocal } from "../services/fleet/shared/handoff/HandoffQueue.js"
import { FleetRegistry } from "../services/fleet/shared/registry/Registry.js"
import { Database } from "../services/platform/Database.js"
import { FaultInjectorFromTestSettings } from "../services/platform/FaultInjector.js"
import { Health } from "../services/platform/Health.js"
import { HostChannelLive } from "../services/platform/hostchannel/ChannelLive.js"
import { Leases } from "../services/platform/Leases.js"
import { LoopbackTrust } from "../services/platform/LoopbackTrust.js"
import { TrustedProxies } from "../services/platform/TrustedProxies.js"
import { FleetServices } from "./Fleet.js"
import { GroundTruthServices } from "./GroundTruth.js"
import { HostAgentLive, storageReconcileOn } from "./HostAgent.js"
import { MarketServices } from "./Market.js"
import { ProductServices } from "./Product.js"

/**
 * Every domain service, each domain's own graph (Product.ts, GroundTruth.ts, Market.ts, Fleet.ts) beside the
 * platform's. It still needs a migrated SqlClient, AppConfig, the vault and an ObjectStore: Live gives the data dir's
 * SQLite file and the environment, Test an in-memory database and fixed settings.
 */
export const DomainServices = Layer.mergeAll(
  Health.Default,
  TrustedProxies.Default,
  LoopbackTrust.Default,
  Leases.Default,
  ProductServices,
  GroundTruthServices,
  MarketServices,
  FleetServices
).pipe(Layer.provideMerge(Database.Default))

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
  storageReconcileOn(HandoffEngineInProcess),
  TargetQueue.Default
).pipe(Layer.provideMerge(HandoffQueueLocal), Layer.provideMerge(ClusterWorkflowEngine.layer))
