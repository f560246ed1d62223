import { Layer } from "effect"
import { HostHealth } from "../services/fleet/control/beacon/HostHealth.js"
import { ActionAuthority } from "../services/fleet/control/grants/ActionAuthority.js"
import { GrantIssuer } from "../services/fleet/control/grants/GrantIssuer.js"
import { JobDiagnosis } from "../services/fleet/control/jobs/JobDiagnosis.js"
import { ObjectAccess } from "../services/fleet/control/objects/ObjectAccess.js"
import { FleetHosts } from "../services/fleet/control/overview/FleetHosts.js"
import { Overview } from "../services/fleet/control/overview/Overview.js"
import { ProviderProfile } from "../services/fleet/control/providers/ProviderProfile.js"
import { AutonomyControl } from "../services/fleet/control/reconciler/AutonomyControl.js"
import { AuthorityRegistry } from "../services/fleet/control/registry/AuthorityRegistry.js"
import { RegistryWriter } from "../services/fleet/control/registry/RegistryWriter.js"
import { CatalogMaintenance } from "../services/fleet/control/releases/CatalogMaintenance.js"
import { ReleaseAuthority } from "../services/fleet/control/releases/ReleaseAuthority.js"
import { ReleaseCatalog } from "../services/fleet/control/releases/ReleaseCatalog.js"
import { ReleasePublisher } from "../services/fleet/control/releases/ReleasePublisher.js"
import { ReleaseRun } from "../services/fleet/control/releases/ReleaseRun.js"
import { RunCopies } from "../services/fleet/control/releases/RunCopies.js"
import { VersionDeclaration } from "../services/fleet/control/releases/VersionDeclaration.js"
import { FleetConfig } from "../services/fleet/shared/FleetConfig.js"
import { JobQueue } from "../services/fleet/shared/jobs/JobQueue.js"
import { FleetRegistry } from "../services/fleet/shared/registry/Registry.js"
import { RunRecords } from "../services/fleet/shared/releases/RunRecords.js"
import { ObjectGateway } from "../services/platform/objects/ObjectGateway.js"
import { StorageFenceLive } from "../services/platform/objects/StorageFence.js"
import { EmbeddedVaultLayer } from "../services/platform/vault/EmbeddedVault.js"
import { ObjectStoreLive } from "./Objects.js"
import { SqlWithSettingsLive } from "./Sql.js"

/**
 * The fleet's control-plane services (registry, grants, releases, jobs, host health, the object gateway), without
 * the reach to hosts (HostReach) or the actors. It needs a migrated SqlClient, AppConfig, the vault and an
 * ObjectStore.
 */
export const FleetServices = Layer.mergeAll(
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
  Layer.provideMerge(FleetConfig.Default)
)

/**
 * The fleet's services alone on the embedded defaults (its registry reads through the object gateway, grants
 * through the vault): `ctl overview`, `ctl registry`, `ctl machine status|logs|pause|resume`, `ctl vault`, most of
 * `ctl release`.
 */
export const FleetServicesLive = FleetServices.pipe(
  Layer.provideMerge(EmbeddedVaultLayer),
  Layer.provideMerge(ObjectStoreLive),
  Layer.provideMerge(SqlWithSettingsLive)
)
