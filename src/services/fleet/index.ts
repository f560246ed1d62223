/**
 * `keel/fleet` (and `Fleet` in the package entry): the control plane's services an embedder talks to — the
 * registry, overview, jobs, releases, the janitor and the reconciler — with their errors, the wire schemas and the
 * migrations. Host-side mechanics (unit rendering, runners, handoff steps, providers) stay internal.
 */
export * from "../../contracts/fleet/Authority.js"
export * from "../../contracts/fleet/Beacon.js"
export * from "../../contracts/fleet/Handoff.js"
// The host protocol under one name; its errors by theirs
export * as HostAgentProtocol from "../../contracts/fleet/HostAgent.js"
export { HostUnreachable, UnitCommandFailed, UnitPreflightRejected } from "../../contracts/fleet/HostAgent.js"
export * from "../../contracts/fleet/HostHealth.js"
export * from "../../contracts/fleet/Jobs.js"
export * from "../../contracts/fleet/Objects.js"
export * from "../../contracts/fleet/Reconciler.js"
export * from "../../contracts/fleet/ReleaseRuns.js"
export * from "./FleetConfig.js"
export * from "./gates/Gates.js"
export * from "./grants/Errors.js"
export * from "./HostAgent.js"
export * from "./janitor/Janitor.js"
export * from "./janitor/JanitorReport.js"
export * from "./jobs/JobQueue.js"
export { fleetMigrations } from "./migrations.js"
export * from "./objects/ObjectApiClient.js"
export * from "./overview/FleetHosts.js"
export * from "./overview/Overview.js"
export * from "./reconciler/ServiceReconciler.js"
export * from "./registry/Registry.js"
export * from "./registry/Schema.js"
export * from "./releases/ReleaseCatalog.js"
export * from "./releases/ReleaseManifest.js"
