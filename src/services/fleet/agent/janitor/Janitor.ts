import * as os from "node:os"
import * as path from "node:path"
import { Config, Effect, Option } from "effect"
import { AppConfig, thisHostName } from "../../../platform/AppConfig.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { packageVersion } from "../../../platform/Package.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { JobQueue } from "../../shared/jobs/JobQueue.js"
import { runningJobsOn } from "../../shared/jobs/JobsApiClient.js"
import { configuredAccess } from "../../shared/objects/ObjectApiClient.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { CleanerNames, type DiskCleanupPolicy } from "../../shared/registry/Schema.js"
import { unitEnvironment } from "../../shared/UnitSettings.js"
import type { CleanerSlot } from "./Cleaners.js"
import { DiskMeter } from "./DiskMeter.js"
import { runPass } from "./JanitorPass.js"
import type { PassEnv, PassOptions, PolicyRead } from "./JanitorPassModel.js"
import type { PolicySource } from "./JanitorReport.js"
import { stateFileAt } from "./JanitorState.js"
import { protect } from "./Protection.js"
import { releaseContext } from "./ReleaseEvidence.js"
import { realPathOf } from "./SafeRemove.js"

const GIB = 1024 ** 3

/** What a host without a declared policy gets: a report, never a deletion. */
export const REPORTING_DEFAULT: DiskCleanupPolicy = {
  mode: "report",
  check_interval_seconds: 3600,
  low_free_gb: 10,
  target_free_gb: 20,
  max_items_per_pass: 1000,
  max_bytes_per_pass: 100 * GIB,
  max_scan_items: 200_000,
  cleaners: { build_caches: { min_age_seconds: 7 * 86_400 } }
}

/**
 * The disk janitor: one pass function, one lock, one state file, for both writers. A pass measures
 * the free space of the filesystems it cleans, gates on interval and watermark, scans the policy's
 * cleaners within one pass budget, and deletes only in `enforce` mode, only what a cleaner proved
 * eligible and nothing protected, through handles that never follow a link, until the target is free.
 */
export class Janitor extends Effect.Service<Janitor>()("fleet/Janitor", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const registry = yield* FleetRegistry
    const meter = yield* DiskMeter
    const queue = yield* JobQueue
    const stateDir = path.resolve(
      yield* Config.string("KEEL_JANITOR_STATE_DIR").pipe(Config.withDefault(path.join(app.dataDir, "janitor")))
    )
    const fleet = yield* FleetConfig
    const { objectDir, vaultKeyFile } = fleet
    const hostName = yield* thisHostName
    // A host that reports to a control plane elsewhere does not hold the jobs that run on it.
    const controlPlane = fleet.controlPlaneUrl
    const localObjects = yield* Effect.serviceOption(ObjectStore)
    // A diagnostic knob for lock tests and demos: hold the lock this long before scanning.
    const holdMs = yield* Config.integer("KEEL_JANITOR_HOLD_MS").pipe(Config.withDefault(0))
    // The build tool's package registry is protected wherever its home is.
    const cargoHome = yield* Config.string("CARGO_HOME").pipe(Config.withDefault(path.join(os.homedir(), ".cargo")))
    const state = stateFileAt(path.join(stateDir, "state.json"))

    /**
     * The host's policy: its declaration, the reporting default for a target that declares none, or why
     * neither (no readable registry, or no target of that name: never silently the default).
     */
    const policyFor = (host: string): Effect.Effect<PolicyRead> =>
      Effect.gen(function* () {
        // A current read only: deleting on the strength of a remembered registry is not a risk worth taking.
        const snapshot = yield* registry.read({ record: false }).pipe(Effect.either)
        if (snapshot._tag === "Left") return { ok: false, why: snapshot.left.detail } as const
        const { freshness, registry: document, source } = snapshot.right
        const target = document.targets.find((t) => t.name === host)
        if (target === undefined)
          return {
            ok: false,
            why: `${host} is not a target of the registry (${source.location}); set KEEL_HOST to this host's target name`
          } as const
        const policySource: PolicySource = {
          target: host,
          kind: source.kind,
          location: source.location,
          freshness,
          declared: target.disk_cleanup !== undefined
        }
        return {
          ok: true,
          policy: target.disk_cleanup ?? REPORTING_DEFAULT,
          source: policySource,
          document
        } as const
      })

    /** Everything no cleaner may delete, contain or (for the build-cache walk) enter. */
    const protectedPaths = (
      policy: DiskCleanupPolicy,
      slots: ReadonlyArray<CleanerSlot>,
      running: ReadonlyArray<string>
    ) => {
      const home = os.homedir()
      const entries: Array<{ path: string; why: string; owner?: string }> = [
        { path: stateDir, why: "janitor_state" },
        { path: app.dataDir, why: "data_dir" },
        { path: objectDir, why: "object_store" },
        { path: vaultKeyFile, why: "vault" },
        { path: path.join(home, ".cache", "huggingface", "hub"), why: "model_hub", owner: "huggingface_cache" },
        { path: path.join(cargoHome, "registry"), why: "package_registry" }
      ]
      // SQLite's companions hold committed writes too (WAL) or the lock state of every connection (shm).
      if (app.databaseFile !== ":memory:") {
        // SQLite puts them beside the file it opens: the link's target when the configured path is a symlink.
        const opened = realPathOf(app.databaseFile)
        for (const base of new Set([app.databaseFile, opened]))
          for (const suffix of ["", "-wal", "-shm", "-journal"])
            entries.push({ path: `${base}${suffix}`, why: "database" })
      }
      // Declared roots of every cleaner, whether or not it can run now.
      for (const [name, settings] of Object.entries(policy.cleaners)) {
        if (settings?.root !== undefined) entries.push({ path: settings.root, why: `${name}_root`, owner: name })
      }
      for (const slot of slots) {
        if (slot.kind !== "ready") continue
        entries.push({ path: slot.record.root.real, why: `${slot.record.name}_root`, owner: slot.record.name })
        for (const read of slot.record.reads) entries.push({ path: read, why: `${slot.record.name}_primary` })
      }
      const workRoot = policy.cleaners.queue_workdirs?.root
      if (workRoot !== undefined)
        for (const id of running) entries.push({ path: path.join(workRoot, id), why: "running_job" })
      return protect(entries)
    }

    /**
     * Why build_caches must wait (a job runs here, or nobody can tell whether one does), or undefined when the host
     * is idle. The jobs are this host's own queue's, or — on a host that reports to a control plane elsewhere — the
     * control plane's, asked with the grant in KEEL_JANITOR_GRANT_FILE (else KEEL_GRANT_FILE) holding job-read for
     * this host. A control plane that does not answer is "cannot tell", which counts as busy.
     */
    const hostIdle = (needsIdle: string) =>
      Effect.gen(function* () {
        if (Option.isNone(controlPlane)) {
          const running = (yield* queue.usage(0)).get(hostName)?.running ?? 0
          return running > 0 ? `${running} job(s) running on ${hostName}; ${needsIdle}` : undefined
        }
        const asked = yield* configuredAccess(["KEEL_JANITOR_GRANT_FILE", "KEEL_GRANT_FILE"], {
          needs: "job-read"
        }).pipe(
          Effect.flatMap((access) => runningJobsOn(access, hostName)),
          Effect.either,
          Effect.provideService(FleetConfig, fleet)
        )
        if (asked._tag === "Left")
          return `cannot tell which jobs run on ${hostName}: the control plane (KEEL_CONTROL_PLANE_URL) holds them and did not answer (${asked.left.code}: ${asked.left.detail}); ${needsIdle}`
        const ids = asked.right
        return ids.length > 0
          ? `${ids.length} job(s) running on ${hostName} (the control plane says: ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}); ${needsIdle}`
          : undefined
      })

    /** Ids of the jobs running on this host (their trees are protected). */
    const runningJobIds = Effect.map(queue.runningOn(hostName), (jobs) => jobs.map((j) => j.id))

    const env: PassEnv = {
      stateDir,
      state,
      host: hostName,
      version: packageVersion,
      holdMs,
      uid: process.getuid?.() ?? 0,
      platform: process.platform,
      meter,
      policy: policyFor(hostName),
      release: (policy, document) =>
        policy.cleaners.release_store === undefined
          ? Effect.succeed(undefined)
          : releaseContext(document, { controlPlane, localObjects, objectDir }).pipe(
              Effect.provideService(FleetConfig, fleet)
            ),
      statesOf: queue.statesOf,
      checks: { hostIdle },
      guard: (policy, slots) =>
        Effect.map(policy.cleaners.queue_workdirs?.root === undefined ? Effect.succeed([]) : runningJobIds, (running) =>
          protectedPaths(policy, slots, running)
        )
    }

    const pass = Effect.fn("Janitor.pass")(function* (options: PassOptions) {
      return yield* runPass(env, options)
    })

    /** The last recorded pass, or `never_run`. */
    const lastReport = Effect.map(state.read, (s) => s.report)

    /** A target's cleaners: which its policy (or the reporting default) configures, and which are built. */
    const cleaners = (host: string) =>
      Effect.map(policyFor(host), (read) => {
        const policy = read.ok ? read.policy : REPORTING_DEFAULT
        return {
          target: host,
          mode: policy.mode,
          declared: read.ok && read.source.declared,
          policy_error: read.ok ? null : read.why,
          cleaners: CleanerNames.map((name) => ({
            name,
            configured: policy.cleaners[name] !== undefined,
            settings: policy.cleaners[name] ?? null,
            available: true
          }))
        }
      })

    /** What the janitor's unit needs to run on its own: the shared unit settings and its state dir. */
    const janitorUnitEnvironment = Effect.map(unitEnvironment, (env) => ({ ...env, KEEL_JANITOR_STATE_DIR: stateDir }))

    return {
      pass,
      lastReport,
      cleaners,
      unitEnvironment: janitorUnitEnvironment.pipe(Effect.provideService(AppConfig, app)),
      stateDir,
      host: hostName
    } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
