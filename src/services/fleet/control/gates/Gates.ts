import { Clock, Duration, Effect, Option, Schema } from "effect"
import { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import type { GatesReport, Observation } from "../../../../contracts/fleet/Gates.js"
import { HostChannel } from "../../../platform/hostchannel/HostChannel.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { formatIssues } from "../../../platform/Validation.js"
import { beaconKey } from "../../shared/beacon/Beacon.js"
import { CapacityPublication, capacityKey } from "../../shared/beacon/HostState.js"
import { channelSpec } from "../../shared/Channels.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { JobQueue } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"

/** How a stored document that does not decode is reported (an observation's error starts with it). */
const INVALID = "invalid document"

type Reading<A> = { readonly state: "complete" | "absent" | "cached"; readonly value?: A }

const GIB = 1024 ** 3

/** `df -Pk` output: POSIX columns, 1024-byte blocks; the available column of the one data line. */
export const parseDfAvailable = (output: string): number | undefined => {
  const line = output.trim().split("\n")[1]
  const available = line?.trim().split(/\s+/)[3]
  return available !== undefined && /^\d+$/.test(available) ? Number(available) * 1024 : undefined
}

/**
 * `ctl host gates`: why a host does or does not admit work. Every read is an observation with its own
 * budget, run concurrently; a read that could not finish leaves the report incomplete (and `claiming`
 * null). Gates only read: no object write, no registry snapshot, no host command but `df`.
 */
export class Gates extends Effect.Service<Gates>()("fleet/Gates", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway
    const channel = yield* HostChannel
    const queue = yield* JobQueue
    const fleet = yield* FleetConfig
    const budget = fleet.gatesBudget
    const budgetMs = Duration.toMillis(budget)
    // The beacon's clock-skew allowance: a publication dated further ahead is no current publication.
    const maxSkewMs = Duration.toMillis(fleet.beaconMaxSkew)
    const knownHosts = fleet.knownHosts

    const skipped = (operation: string, source: string, why: string): Observation => ({
      operation,
      source,
      state: "skipped",
      started_at: null,
      finished_at: null,
      elapsed_ms: null,
      budget_ms: budgetMs,
      error: why
    })

    /** Runs one read within the budget; the read is disconnected so a stuck one cannot hold the report. */
    const observe = <A, E>(operation: string, source: string, read: Effect.Effect<Reading<A>, E>) =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const outcome = yield* Effect.disconnect(read).pipe(Effect.timeoutOption(budget), Effect.either)
        const finished = yield* Clock.currentTimeMillis
        const base = {
          operation,
          source,
          started_at: new Date(started).toISOString(),
          finished_at: new Date(finished).toISOString(),
          elapsed_ms: finished - started,
          budget_ms: budgetMs
        }
        if (outcome._tag === "Left") {
          const error = outcome.left as { detail?: string; message?: string }
          return [
            { ...base, state: "error", error: error.detail ?? error.message ?? String(outcome.left) },
            Option.none<A>()
          ] as const
        }
        if (Option.isNone(outcome.right))
          return [{ ...base, state: "timed_out", error: `no answer within ${budgetMs} ms` }, Option.none<A>()] as const
        const reading = outcome.right.value
        return [
          { ...base, state: reading.state, error: null } satisfies Observation,
          Option.fromNullable(reading.value)
        ] as const
      })

    const report = Effect.fn("Gates.report")(function* (host: string) {
      const now = yield* Clock.currentTimeMillis
      // Bytes that are not JSON are an invalid document like JSON of the wrong shape (never quoted: a host
      // wrote them); only a store that cannot answer is a failed read.
      const readJson = <A, I>(key: string, schema: Schema.Schema<A, I>) =>
        objects.get(key).pipe(
          Effect.flatMap((found) => {
            if (Option.isNone(found)) return Effect.succeed<Reading<A>>({ state: "absent" })
            let parsed: unknown
            try {
              parsed = JSON.parse(new TextDecoder().decode(found.value.bytes))
            } catch {
              return Effect.fail({ detail: `${INVALID} ${key}: not JSON` })
            }
            return Schema.decodeUnknown(schema, { errors: "all" })(parsed).pipe(
              Effect.map((value): Reading<A> => ({ state: "complete", value })),
              Effect.mapError((error) => ({
                detail: `${INVALID} ${key}: ${formatIssues(error, { limit: 3, withoutValues: true })}`
              }))
            )
          })
        )

      const registryRead = observe(
        "registry.read",
        "registry",
        Effect.gen(function* () {
          const snapshot = yield* registry.read({ allowCached: true, record: false })
          const target = snapshot.registry.targets.find((t) => t.name === host)
          if (target === undefined) return yield* Effect.fail({ detail: `${host} is not a target of the registry` })
          return {
            state: snapshot.freshness === "cached" ? "cached" : "complete",
            value: { target, silence: snapshot.registry.settings.host_silence_seconds }
          } satisfies Reading<{ target: Target; silence: number }>
        })
      )
      const diskRead = (target: Target) => {
        const mount = target.mounts[0] ?? "/"
        return observe(
          "host.disk",
          `df -Pk ${mount} on ${target.name}`,
          Effect.gen(function* () {
            const result = yield* channel.run(channelSpec(target, knownHosts), {
              argv: ["df", "-Pk", mount],
              timeoutMs: budgetMs + 1_000
            })
            if (result.exitCode !== 0)
              return yield* Effect.fail({
                detail: `df exited ${result.exitCode}: ${new TextDecoder().decode(result.stderr).trim()}`
              })
            const free = parseDfAvailable(new TextDecoder().decode(result.stdout))
            if (free === undefined) return yield* Effect.fail({ detail: "df printed no available-blocks column" })
            return { state: "complete", value: { mount, free } } satisfies Reading<{ mount: string; free: number }>
          })
        )
      }

      const [[registryObs, known], [beaconObs, beacon], [capacityObs, capacity], [queueObs, queueState]] =
        yield* Effect.all(
          [
            registryRead,
            observe("object.get", beaconKey(host), readJson(beaconKey(host), HostBeacon)),
            observe("object.get", capacityKey(host), readJson(capacityKey(host), CapacityPublication)),
            observe(
              "queue.stats",
              "job queue",
              Effect.map(queue.stats, (value) => ({ state: "complete" as const, value }))
            )
          ],
          { concurrency: "unbounded" }
        )
      const [diskObs, disk] = Option.isSome(known)
        ? yield* diskRead(known.value.target)
        : [
            skipped("host.disk", `df -Pk on ${host}`, "the registry read did not name this host"),
            Option.none<{ mount: string; free: number }>()
          ]

      const observations = [registryObs, beaconObs, diskObs, capacityObs, queueObs]
      // Required reads: the registry (a cached one is documented as enough), the beacon, the disk, the queue.
      const complete =
        (registryObs.state === "complete" || registryObs.state === "cached") &&
        beaconObs.state === "complete" &&
        diskObs.state === "complete" &&
        // Optional: an absent publication is fine, and so is a corrupt one (reported, never used).
        (capacityObs.state === "complete" ||
          capacityObs.state === "absent" ||
          (capacityObs.state === "error" && capacityObs.error?.startsWith(INVALID) === true)) &&
        queueObs.state === "complete"

      const silenceMs = Option.match(known, { onNone: () => null, onSome: (k) => k.silence * 1000 })
      const reportedAt = Option.map(beacon, (b) => b.reported_at)
      const ageMs = Option.map(reportedAt, (at) => now - Date.parse(at))
      const fresh = Option.isSome(ageMs) && silenceMs !== null ? ageMs.value <= silenceMs : null
      const lowFreeGb = Option.flatMap(known, (k) => Option.fromNullable(k.target.disk_cleanup?.low_free_gb))
      const freeBytes = Option.map(disk, (d) => d.free)
      const belowWatermark =
        Option.isSome(freeBytes) && Option.isSome(lowFreeGb) ? freeBytes.value < lowFreeGb.value * GIB : null
      // Current: about this host, no older than the silence threshold, and not from the future (a publication
      // dated 2099 would otherwise keep a host admitting whatever its disk does).
      const publication = Option.filter(capacity, (c) => {
        const age = now - Date.parse(c.published_at)
        return c.host === host && silenceMs !== null && age <= silenceMs && age >= -maxSkewMs
      })
      const pressureSource = Option.isSome(publication) ? "capacity_publication" : "host_disk_measurement"

      const reasons: Array<string> = []
      if (Option.isSome(queueState) && queueState.value.paused) reasons.push("queue_paused")
      if (fresh === false) reasons.push("beacon_stale")
      if (Option.isSome(publication)) {
        if (!publication.value.admitting) reasons.push(`capacity: ${publication.value.reason}`)
      } else if (belowWatermark === true) reasons.push("disk_below_watermark")

      return {
        host,
        complete,
        claiming: complete ? { admits: reasons.length === 0, reasons } : null,
        observations,
        disk: {
          mount: Option.getOrNull(Option.map(disk, (d) => d.mount)),
          free_bytes: Option.getOrNull(freeBytes),
          free_gb: Option.getOrNull(Option.map(freeBytes, (b) => Number((b / GIB).toFixed(2)))),
          low_free_gb: Option.getOrNull(lowFreeGb)
        },
        below_watermark: belowWatermark,
        pressure_source: pressureSource,
        capacity: {
          diagnostics: Option.getOrNull(
            Option.map(capacity, (c) => ({ reason: c.reason, state: c.state, admitting: c.admitting }))
          )
        },
        beacon: {
          reported_at: Option.getOrNull(reportedAt),
          age_seconds: Option.getOrNull(Option.map(ageMs, (ms) => Math.round(ms / 1000))),
          fresh
        },
        queue: Option.getOrNull(Option.map(queueState, (q) => ({ paused: q.paused, counts: q.counts })))
      } satisfies GatesReport
    })

    return { report } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
