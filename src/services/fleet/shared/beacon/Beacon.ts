import { Effect, Schema } from "effect"
import { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import { formatIssues } from "../../../platform/Validation.js"

export const beaconKey = (host: string) => `host_health/${host}.json`

/**
 * A beacon document checked by the one set of rules the writer and the control plane share (unknown fields
 * refused); a refusal names each field, at most ten, never a schema dump.
 */
export const decodeBeacon = (document: unknown) =>
  Schema.decodeUnknown(HostBeacon, { errors: "all", onExcessProperty: "error" })(document).pipe(
    Effect.mapError((error) => formatIssues(error, { limit: 10 }))
  )
