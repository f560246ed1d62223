import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ActionNotHeld, AuthorityUnavailable } from "../fleet/Authority.js"
import { HostBeacon } from "../fleet/Beacon.js"
import { BeaconInvalid, BeaconStale, BeaconStoreFailed, StoredBeaconAnswer } from "../fleet/HostHealth.js"
import { VaultDenied, VaultForbidden } from "../vault/Errors.js"
import { describedBy } from "./Answers.js"
import { Bearer } from "./Common.js"

/**
 * The body is a beacon (`keel.beacon/v1`, docs/beacon.md), described for the OpenAPI document and the typed clients
 * but not decoded here: `HostHealth.store` checks the token first (an unauthenticated caller learns nothing about
 * what a valid beacon is), then the document, answering 400 `BEACON_INVALID` with each field's path. A decode at
 * this edge would answer a malformed body before the token, as 400 `VALIDATION_FAILED`.
 */
const BeaconBody = describedBy(
  HostBeacon,
  "A host-health beacon (docs/beacon.md); validated by the control plane after the token, unknown fields refused"
)

export class HostHealthApi extends HttpApiGroup.make("hostHealth")
  .add(
    HttpApiEndpoint.put("put", "/host-health")
      .setHeaders(Bearer)
      .setPayload(BeaconBody)
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
