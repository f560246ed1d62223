import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BeaconInvalid, BeaconStale, BeaconStoreFailed } from "../../services/fleet/beacon/HostHealth.js"
import { ActionNotHeld, AuthorityUnavailable } from "../../services/fleet/grants/ActionAuthority.js"
import { VaultDenied, VaultForbidden } from "../../services/platform/vault/Vault.js"
import { problemOpenApi } from "../ProblemContract.js"

export const StoredBeaconAnswer = Schema.Struct({
  host: Schema.String,
  key: Schema.String,
  reported_at: Schema.String,
  stored_at: Schema.String
})

export class HostHealthApi extends HttpApiGroup.make("hostHealth")
  .add(
    HttpApiEndpoint.put("put", "/host-health")
      .setHeaders(Schema.Struct({ authorization: Schema.optional(Schema.String) }))
      .setPayload(Schema.Unknown)
      .addSuccess(StoredBeaconAnswer)
      .addError(BeaconInvalid)
      .addError(BeaconStale)
      .addError(BeaconStoreFailed)
      .addError(VaultDenied)
      .addError(VaultForbidden)
      .addError(ActionNotHeld)
      .addError(AuthorityUnavailable)
      .annotate(
        OpenApi.Description,
        "Stores a host-health beacon at host_health/<host>.json. Bearer token from the vault, scoped to " +
          "host-health-write for that host, of a consumer the registry lists under actions.host-health-write; " +
          "an older beacon than the stored one is 409."
      )
  )
  .annotate(OpenApi.Title, "Host health") {}

/** The fleet control plane: host-health beacons and the storage-root handoff (under /api). */
export class ControlPlaneApi extends HttpApi.make("controlplane")
  .add(HostHealthApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel fleet control plane")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Host-health beacons and the storage-root handoff saga.") {}
