import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ActionNotHeld, AuthorityUnavailable } from "../fleet/Authority.js"
import { BeaconInvalid, BeaconStale, BeaconStoreFailed, StoredBeaconAnswer } from "../fleet/HostHealth.js"
import { VaultDenied, VaultForbidden } from "../vault/Errors.js"
import { Bearer } from "./Common.js"

export class HostHealthApi extends HttpApiGroup.make("hostHealth")
  .add(
    HttpApiEndpoint.put("put", "/host-health")
      .setHeaders(Bearer)
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
