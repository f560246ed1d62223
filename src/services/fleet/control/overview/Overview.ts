import { Clock, Duration, Effect, Option, Schema } from "effect"
import { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import type * as Contract from "../../../../contracts/fleet/Overview.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { beaconKey } from "../../shared/beacon/Beacon.js"
import { CapacityPublication, capacityKey } from "../../shared/beacon/HostState.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { JobQueue } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { FleetRegistryDocument } from "../../shared/registry/Schema.js"

const GIB = 1024 ** 3

/** `ctl overview --json`, `GET /api/fleet/overview`: its shape's home is the contract. */
export type OverviewReport = typeof Contract.OverviewReport.Type

/** A part of the overview that could not be read says so; it is never shown as zero. */
export type Part<A> = ({ readonly state: "available" } & A) | typeof Contract.Unavailable.Type

const describe = (error: unknown) =>
  typeof error === "object" && error !== null && "detail" in error ? String(error.detail) : String(error)

/**
 * `ctl overview`: the fleet (beacon freshness, a claiming verdict from the stored evidence, free disk),
 * the queue, slot quotas against running jobs, and this month's job-hours × rates — all from the
 * configured backend, each part on its own so one unreachable part does not hide the others.
 */
export class Overview extends Effect.Service<Overview>()("fleet/Overview", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway
    const queue = yield* JobQueue
    const budget = (yield* FleetConfig).gatesBudget

    const part = <A, E>(read: Effect.Effect<A, E>): Effect.Effect<Part<A>> =>
      Effect.disconnect(read).pipe(
        Effect.timeoutFail({ duration: budget, onTimeout: () => `no answer within ${Duration.format(budget)}` }),
        Effect.match({
          onFailure: (error) => ({ state: "unavailable" as const, error: describe(error) }),
          onSuccess: (value) => ({ state: "available" as const, ...value })
        })
      )

    const readJson = <A, I>(key: string, schema: Schema.Schema<A, I>) =>
      Effect.flatMap(objects.getJson(key), (found) =>
        Option.isNone(found)
          ? Effect.succeed(Option.none<A>())
          : Effect.map(Schema.decodeUnknown(schema)(found.value), Option.some)
      )

    /** One host: its beacon's freshness and free disk, and a claiming verdict from the stored evidence. */
    const hostRow = (target: Target, now: number, silenceMs: number, paused: boolean | null) =>
      Effect.gen(function* () {
        const beacon = yield* part(Effect.map(readJson(beaconKey(target.name), HostBeacon), (b) => ({ beacon: b })))
        const capacity = yield* part(
          Effect.map(readJson(capacityKey(target.name), CapacityPublication), (c) => ({ capacity: c }))
        )
        if (beacon.state === "unavailable") return { host: target.name, os: target.os, beacon }
        const found = beacon.beacon
        const age = Option.map(found, (b) => now - Date.parse(b.reported_at))
        const fresh = Option.map(age, (ms) => ms <= silenceMs)
        const free = Option.flatMap(found, (b) => Option.fromNullable(b.disks[0]?.available_bytes ?? null))
        const lowFree = target.disk_cleanup?.low_free_gb
        const publication =
          capacity.state === "available"
            ? Option.filter(capacity.capacity, (c) => now - Date.parse(c.published_at) <= silenceMs)
            : Option.none()
        // A verdict needs evidence: without a fresh beacon (or the queue's state) there is none.
        const reasons: Array<string> = []
        if (paused === true) reasons.push("queue_paused")
        if (Option.isSome(publication)) {
          if (!publication.value.admitting) reasons.push(`capacity: ${publication.value.reason}`)
        } else if (Option.isSome(free) && lowFree !== undefined && free.value < lowFree * GIB)
          reasons.push("disk_below_watermark")
        const claiming =
          Option.getOrElse(fresh, () => false) && paused !== null ? { admits: reasons.length === 0, reasons } : null
        return {
          host: target.name,
          os: target.os,
          beacon: {
            state: "available" as const,
            reported_at: Option.getOrNull(Option.map(found, (b) => b.reported_at)),
            age_seconds: Option.getOrNull(Option.map(age, (ms) => Math.round(ms / 1000))),
            fresh: Option.getOrNull(fresh)
          },
          claiming,
          free_bytes: Option.getOrNull(free),
          free_gb: Option.getOrNull(Option.map(free, (b) => Number((b / GIB).toFixed(2))))
        }
      })

    const report = Effect.fn("Overview.report")(function* () {
      const now = yield* Clock.currentTimeMillis
      const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1)
      const snapshot = yield* registry.read({ allowCached: true, record: false }).pipe(Effect.either)
      const queueStats = yield* part(Effect.map(queue.stats, (s) => ({ stats: s })))
      const usage = yield* part(Effect.map(queue.usage(monthStart), (u) => ({ usage: u })))

      if (snapshot._tag === "Left") {
        const unavailable = { state: "unavailable" as const, error: snapshot.left.detail }
        return {
          generated_at: new Date(now).toISOString(),
          fleet: unavailable,
          queue: queueView(queueStats),
          quota: unavailable,
          billing: unavailable
        } satisfies OverviewReport
      }
      const { registry: fleet } = snapshot.right
      const silenceMs = fleet.settings.host_silence_seconds * 1000
      const paused = queueStats.state === "available" ? queueStats.stats.paused : null
      const hosts = yield* Effect.forEach(fleet.targets, (target) => hostRow(target, now, silenceMs, paused), {
        concurrency: 8
      })
      const quota = quotaOf(fleet, usage)
      const billing = billingOf(fleet, usage, monthStart)
      return {
        generated_at: new Date(now).toISOString(),
        fleet: {
          state: "available" as const,
          registry: snapshot.right.freshness,
          // Why the registry is the last valid copy rather than a current read (null when current).
          registry_cached_because: snapshot.right.cachedBecause ?? null,
          host_silence_seconds: fleet.settings.host_silence_seconds,
          hosts
        },
        queue: queueView(queueStats),
        quota,
        billing
      } satisfies OverviewReport
    })

    return { report } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}

type Target = FleetRegistryDocument["targets"][number]
type Usage = Part<{ readonly usage: Effect.Effect.Success<ReturnType<JobQueue["usage"]>> }>

/** Slot quotas against the jobs running now. */
const quotaOf = (
  fleet: FleetRegistryDocument,
  usage: Usage
): Part<{ targets: ReadonlyArray<{ host: string; slots: number | null; running: number }> }> =>
  usage.state === "available"
    ? {
        state: "available",
        targets: fleet.targets.map((t) => ({
          host: t.name,
          slots: t.slots ?? null,
          running: usage.usage.get(t.name)?.running ?? 0
        }))
      }
    : usage

/** This month's job-hours × each target's hourly rate. */
const billingOf = (fleet: FleetRegistryDocument, usage: Usage, monthStart: number) => {
  if (usage.state !== "available") return usage
  const targets = fleet.targets.map((t) => {
    const hours = usage.usage.get(t.name)?.jobHours ?? 0
    return {
      host: t.name,
      job_hours: Number(hours.toFixed(4)),
      hourly_rate: t.hourly_rate ?? null,
      cost: t.hourly_rate === undefined ? null : Number((hours * t.hourly_rate).toFixed(2))
    }
  })
  return {
    state: "available" as const,
    month: new Date(monthStart).toISOString().slice(0, 7),
    targets,
    total: Number(targets.reduce((sum, t) => sum + (t.cost ?? 0), 0).toFixed(2))
  }
}

const queueView = (
  stats: Part<{ stats: { counts: Record<string, number>; paused: boolean; oldestQueuedAgeMs: number | null } }>
) =>
  stats.state === "available"
    ? {
        state: "available" as const,
        paused: stats.stats.paused,
        counts: stats.stats.counts,
        oldest_queued_age_seconds:
          stats.stats.oldestQueuedAgeMs === null ? null : Math.round(stats.stats.oldestQueuedAgeMs / 1000)
      }
    : stats
