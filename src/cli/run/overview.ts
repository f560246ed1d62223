import { Effect } from "effect"
import { Overview } from "../../services/fleet/control/overview/Overview.js"
import { emit, table } from "../Output.js"

const unavailable = (part: { state: string; error?: string }) => `unavailable: ${part.error ?? "unknown"}`

export const overview = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const report = yield* (yield* Overview).report()
    yield* emit(json, report, (r) => {
      const lines: Array<string> = [`fleet overview at ${r.generated_at}`]
      if (r.fleet.state === "available") {
        if (r.fleet.registry === "cached")
          lines.push(
            `registry: the last valid copy (cannot read the source: ${r.fleet.registry_cached_because ?? "unknown"})`
          )
        lines.push(
          table(
            ["HOST", "OS", "BEACON AGE", "FRESH", "CLAIMING", "FREE"],
            r.fleet.hosts.map((h) => [
              h.host,
              h.os,
              h.beacon.state === "available"
                ? h.beacon.age_seconds === null
                  ? "never"
                  : `${h.beacon.age_seconds}s`
                : "unavailable",
              h.beacon.state === "available" ? String(h.beacon.fresh ?? "-") : "-",
              "claiming" in h && h.claiming !== null
                ? h.claiming.admits
                  ? "admits"
                  : `refuses (${h.claiming.reasons.join(", ")})`
                : "unknown",
              "free_gb" in h && h.free_gb !== null ? `${h.free_gb} GiB` : "unknown"
            ])
          )
        )
      } else lines.push(`fleet: ${unavailable(r.fleet)}`)
      lines.push(
        r.queue.state === "available"
          ? `queue${r.queue.paused ? " (paused)" : ""}: ${Object.entries(r.queue.counts)
              .map(([k, v]) => `${k} ${v}`)
              .join(", ")}; ${
              r.queue.oldest_queued_age_seconds === null
                ? "nothing queued"
                : `oldest queued ${r.queue.oldest_queued_age_seconds}s`
            }`
          : `queue: ${unavailable(r.queue)}`
      )
      lines.push(
        r.quota.state === "available"
          ? `quota: ${r.quota.targets.map((t) => `${t.host} ${t.running}/${t.slots ?? "no declared slots"}`).join(", ")}`
          : `quota: ${unavailable(r.quota)}`
      )
      lines.push(
        r.billing.state === "available"
          ? `billing ${r.billing.month}: ${r.billing.targets.map((t) => `${t.host} ${t.job_hours}h${t.cost === null ? "" : ` = ${t.cost}`}`).join(", ")}; total ${r.billing.total}`
          : `billing: ${unavailable(r.billing)}`
      )
      return lines.join("\n")
    })
  })
