import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { HostBeacon } from "../fleet/Beacon.js"
import { BeaconInvalid, BeaconStale, BeaconStoreFailed, StoredBeaconAnswer } from "../fleet/HostHealth.js"
import { describedBy } from "./Answers.js"
import { FleetAuth, RequiredAction } from "./FleetAuth.js"

/**
 * The body is a beacon (`keel.beacon/v1`, docs/beacon.md), described for the OpenAPI document and the typed clients
 * but not decoded here: FleetAuth checks the token first (an unauthenticated caller learns nothing about what a
 * valid beacon is), then `HostHealth.store` the document, answering 400 `BEACON_INVALID` with each field's path
 * (a decode at this edge would answer 400 `VALIDATION_FAILED` instead), then the grant for the beacon's host.
 */
const BeaconBody = describedBy(
  HostBeacon,
  "A host-health beacon (docs/beacon.md); validated by the control plane after the token, unknown fields refused"
)

export class HostHealthApi extends HttpApiGroup.make("hostHealth")
  .add(
    HttpApiEndpoint.put("put", "/host-health")
      .annotate(RequiredAction, "host-health-write")
      .setPayload(BeaconBody)
      .addSuccess(StoredBeaconAnswer)
      .addError(BeaconInvalid)
      .addError(BeaconStale)
      .addError(BeaconStoreFailed)
      .annotate(
        OpenApi.Description,
        "Stores a host-health beacon at host_health/<host>.json; an older beacon than the stored one is 409. " +
          "Needs host-health-write for the beacon's host."
      )
  )
  .middleware(FleetAuth)
  .annotate(OpenApi.Title, "Host health") {}
