import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as Yaml from "yaml"
import { vaultGrant } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { janitorTestLayer } from "../support/janitor.js"
import { CACHEDIR_SIGNATURE, DiskMeter, Janitor, JobQueue } from "../support/keel.js"
import { serverPort } from "../support/market.js"

// Issue 42, item 8: on a host that reports to a control plane (KEEL_CONTROL_PLANE_URL), the jobs that run on it
// are the control plane's. The janitor asks it (GET /api/fleet/jobs?target=<host>&state=running, a grant holding
// job-read for the host) before build_caches; only a control plane that does not answer is "cannot tell".
// The control plane is a real server on a loopback port; the janitor has its own data dir and empty queue.

const temp = (prefix: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
const dir = temp("keel-janitor-cp-jobs-")
const registryFile = path.join(dir, "registry.yml")
fs.writeFileSync(
  registryFile,
  Yaml.stringify({
    version: 1,
    actions: { "job-read": ["janitor-jan"], "object-read": ["janitor-jan"] },
    targets: [
      {
        name: "jan",
        os: "linux",
        channel: "local",
        disk_cleanup: {
          mode: "enforce",
          check_interval_seconds: 3600,
          low_free_gb: 50,
          target_free_gb: 100,
          max_items_per_pass: 100,
          max_bytes_per_pass: 1024 ** 4,
          max_scan_items: 200_000,
          cleaners: { build_caches: { min_age_seconds: 3600, root: path.join(dir, "caches") } }
        }
      },
      { name: "other", os: "linux", channel: "local" }
    ]
  })
)

/** A tagged build cache, aged two days, under the cleaner's root. */
const cacheDir = (name: string) => {
  const cache = path.join(dir, "caches", name)
  fs.mkdirSync(cache, { recursive: true })
  fs.writeFileSync(path.join(cache, "CACHEDIR.TAG"), `${CACHEDIR_SIGNATURE}\n`)
  fs.writeFileSync(path.join(cache, "payload.bin"), Buffer.alloc(4096))
  const when = new Date(Date.now() - 48 * 3_600_000)
  fs.utimesSync(cache, when, when)
  return cache
}

/** An owner-only grant credential file of consumer janitor-jan holding `actions` for `hosts`. */
const grantFile = (name: string, actions: Array<string>, hosts: Array<string>) =>
  Effect.map(vaultGrant({ consumer: "janitor-jan", actions, hosts }), ({ credential }) => {
    const file = path.join(dir, name)
    fs.writeFileSync(file, JSON.stringify(credential), { mode: 0o600 })
    return file
  })

/** One enforcing pass toward the target on host jan (free space never at target), reporting to the server. */
const passReporting = (grant: string) =>
  Effect.gen(function* () {
    const port = yield* serverPort
    return yield* Effect.flatMap(Janitor, (janitor) => janitor.pass({ writer: "watch", toTarget: true })).pipe(
      Effect.provide(
        janitorTestLayer(
          {
            KEEL_REGISTRY: registryFile,
            KEEL_JANITOR_STATE_DIR: temp("keel-janitor-cp-state-"),
            KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
            KEEL_JANITOR_GRANT_FILE: grant
          },
          Layer.succeed(DiskMeter, { available: () => Effect.succeed(0) }),
          temp("keel-janitor-cp-data-")
        )
      )
    )
  })

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "90 seconds",
  excludeTestServices: true
})("build_caches on a host whose jobs are the control plane's", (it) => {
  it.effect("asks the control plane: idle there → cleaned; a job running there → blocked_running_jobs, naming it", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const grant = yield* grantFile("janitor.grant", ["job-read", "object-read"], ["jan"])
      // Another host's running job does not make this one busy.
      yield* queue.submit({ kind: "command", target: "other", argv: ["sleep", "60"] })
      assert.strictEqual(Option.getOrThrow(yield* queue.claim("worker-other", 600_000)).target, "other")
      const first = cacheDir("first")
      const idle = yield* passReporting(grant)
      assert.notStrictEqual(idle.outcome, "blocked_running_jobs", idle.detail ?? "")
      assert.isFalse(fs.existsSync(first), "the control plane says nothing runs on jan: the cache is reclaimed")

      const job = yield* queue.submit({ kind: "command", target: "jan", argv: ["make"] })
      assert.strictEqual(Option.getOrThrow(yield* queue.claim("worker-jan", 600_000)).id, job.id)
      const second = cacheDir("second")
      const busy = yield* passReporting(grant)
      assert.strictEqual(busy.outcome, "blocked_running_jobs")
      assert.strictEqual(
        busy.detail,
        `1 job(s) running on jan (the control plane says: ${job.id}); build_caches needs the host idle`
      )
      assert.isTrue(fs.existsSync(path.join(second, "payload.bin")))
      yield* queue.complete(job.id, "worker-jan", { exitCode: 0 })
    })
  )

  it.effect("a control plane that does not answer the question (a grant without job-read) is cannot tell = busy", () =>
    Effect.gen(function* () {
      const grant = yield* grantFile("no-job-read.grant", ["object-read"], ["jan"])
      const cache = cacheDir("third")
      const report = yield* passReporting(grant)
      assert.strictEqual(report.outcome, "blocked_running_jobs")
      assert.match(report.detail ?? "", /^cannot tell which jobs run on jan: .*\(VAULT_FORBIDDEN: /)
      assert.isTrue(fs.existsSync(path.join(cache, "payload.bin")))
    })
  )
})
