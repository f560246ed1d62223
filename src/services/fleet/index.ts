/**
 * `keel/fleet` (and `Fleet` in the package entry): the control plane's services an embedder talks to — the
 * registry, overview, jobs, releases, the janitor and the reconciler — with their errors, the wire schemas and the
 * migrations. Host-side mechanics (unit rendering, runners, handoff steps, providers) stay internal.
 */
export * from "../../contracts/fleet/Authority.js"
export * from "../../contracts/fleet/Beacon.js"
export * from "../../contracts/fleet/Handoff.js"
export * from "../../contracts/fleet/HandoffReport.js"
// The host protocol under one name; its errors by theirs
export * as HostAgentProtocol from "../../contracts/fleet/HostAgent.js"
export { HostUnreachable, UnitCommandFailed, UnitPreflightRejected } from "../../contracts/fleet/HostAgent.js"
export * from "../../contracts/fleet/HostHealth.js"
export * from "../../contracts/fleet/Jobs.js"
export * from "../../contracts/fleet/Objects.js"
export * from "../../contracts/fleet/Reconciler.js"
export * from "../../contracts/fleet/ReleaseRuns.js"
export * from "./agent/janitor/Janitor.js"
export * from "./agent/janitor/JanitorReport.js"
export * from "./control/gates/Gates.js"
export * from "./control/grants/Errors.js"
export * from "./control/overview/FleetHosts.js"
export * from "./control/overview/Overview.js"
export * from "./control/reconciler/ServiceReconciler.js"
export * from "./control/releases/ReleaseCatalog.js"
export * from "./shared/beacon/HostState.js"
export * from "./shared/FleetConfig.js"
export * from "./shared/HostAgent.js"
export * from "./shared/jobs/JobQueue.js"
export { fleetMigrations } from "./shared/migrations.js"
export * from "./shared/objects/ObjectApiClient.js"
export * from "./shared/registry/Registry.js"
export * from "./shared/registry/Schema.js"
export * from "./shared/releases/ReleaseManifest.js"
