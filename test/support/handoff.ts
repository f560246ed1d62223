/** The steps a storage-root handoff's Run records, in order (docs/handoff.md), and the Rollback's. */
export const RUN_STEPS = [
  "capture",
  "placement",
  "drain",
  "stop_writers",
  "fence",
  "preflight",
  "checkpoint",
  "union",
  "data_commit",
  "activate",
  "restore",
  "release"
] as const

export const ROLLBACK_STEPS = [
  "rollback_tree",
  "rollback_route",
  "rollback_services",
  "rollback_queue",
  "rollback_release"
] as const
