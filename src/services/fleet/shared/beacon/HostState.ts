import { Schema } from "effect"
import { UtcTimestamp } from "../../../../contracts/fleet/Beacon.js"

// What a host's agent publishes about itself besides its beacon (HostStatePublisher writes it, the control
// plane's gates and overview read it): here, below both, so the agent does not import the control plane for a key.

/** What the host's agent publishes about its own admission (`state/capacity/<host>.json`). */
export const CapacityPublication = Schema.Struct({
  host: Schema.String,
  published_at: UtcTimestamp,
  admitting: Schema.Boolean,
  reason: Schema.String,
  state: Schema.String
})
export type CapacityPublication = typeof CapacityPublication.Type

export const capacityKey = (host: string) => `state/capacity/${host}.json`

export const janitorReportKey = (host: string) => `state/janitor/${host}.json`
