import { Effect } from "effect"
import { type ClusterReport, ClusterStatus } from "../../services/platform/ClusterStatus.js"
import { emit, table } from "../Output.js"

const entityText = (entities: Record<string, number>) =>
  Object.entries(entities)
    .filter(([, n]) => n > 0)
    .map(([type, n]) => `${type} ${n}`)
    .join(", ") || "-"

const text = (r: ClusterReport) =>
  `mode ${r.mode}; ${r.shards_per_group} shards per group; lock expiry ${r.lock_expiration_seconds}s; ` +
  `${r.unassigned_shards} shards unassigned; actors known: ${entityText(r.entities)}\n` +
  (r.runners.length === 0
    ? "no runner has registered in this database yet"
    : table(
        ["RUNNER", "HEALTHY", "ALIVE", "HEARTBEAT", "SHARDS", "ACTORS"],
        r.runners.map((runner) => [
          runner.address,
          runner.healthy ? "yes" : "no",
          runner.alive ? "yes" : "no",
          `${runner.heartbeat_age_seconds}s ago`,
          String(runner.shards),
          entityText(runner.entities)
        ])
      ))

export const status = ({ json }: { readonly json: boolean }) =>
  Effect.flatMap(ClusterStatus, (cluster) => cluster.report).pipe(Effect.flatMap((report) => emit(json, report, text)))
