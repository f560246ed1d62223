import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { janitorTestLayer, scriptedMeter } from "../support/janitor.js"
import {
  CACHEDIR_SIGNATURE,
  type CleanupReport,
  DiskMeter,
  Janitor,
  JobQueue,
  scanBackupTwins,
  scanBudget,
  scanBuildCaches,
  scanRecordings
} from "../support/keel.js"

const GIB = 1024 ** 3
const DAY = 86_400_000
/** Passes a resumed scan may take before the test gives up (every loop below is bounded by it). */
const MAX_PASSES = 20

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

const age = (file: string, days: number) => {
  const when = new Date(Date.now() - days * DAY)
  fs.utimesSync(file, when, when)
}

/** A directory with a CACHEDIR.TAG (`tag` overrides its first line), `bytes` of payload, aged `ageDays`. */
const cacheDir = (dir: string, options: { tag?: string; bytes?: number; ageDays?: number } = {}) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${options.tag ?? CACHEDIR_SIGNATURE}\n# generated\n`)
  fs.writeFileSync(path.join(dir, "payload.bin"), Buffer.alloc(options.bytes ?? 1024))
  age(dir, options.ageDays ?? 10)
  return dir
}

const put = (file: string, content: string | Buffer) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  return file
}

/** A recording with a matching upload proof (or none), aged `ageDays`. */
const recording = (file: string, options: { proof?: boolean; bytes?: number; ageDays?: number } = {}) => {
  const bytes = Buffer.alloc(options.bytes ?? 600, path.basename(file))
  put(file, bytes)
  if (options.proof !== false)
    fs.writeFileSync(
      `${file}.upload-proof.json`,
      JSON.stringify({
        file: path.basename(file),
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        uploaded_at: new Date().toISOString(),
        destination: "s3://recordings/x"
      })
    )
  age(file, options.ageDays ?? 30)
  return file
}

/** A hub repo: `used` blobs a snapshot of `refs/main` links to, `orphans` no snapshot links to. */
const hubRepo = (hub: string, name: string, options: { used: number; orphans: number; staleSnapshot?: boolean }) => {
  const repo = path.join(hub, name)
  fs.mkdirSync(path.join(repo, "snapshots", "rev-main"), { recursive: true })
  for (let i = 0; i < options.used; i++) {
    put(path.join(repo, "blobs", `used-${i}`), `used ${name} ${i}`)
    fs.symlinkSync(`../../blobs/used-${i}`, path.join(repo, "snapshots", "rev-main", `file-${i}.json`))
  }
  for (let i = 0; i < options.orphans; i++) put(path.join(repo, "blobs", `orphan-${i}`), `orphan ${name} ${i}`)
  if (options.staleSnapshot === true) fs.mkdirSync(path.join(repo, "snapshots", "rev-stale"))
  put(path.join(repo, "refs", "main"), "rev-main")
  return repo
}

const registryWith = (dir: string, host: string, policy: Record<string, unknown>) => {
  const file = path.join(dir, "registry.yml")
  const body = { version: 1, targets: [{ name: host, os: "linux", channel: "local", disk_cleanup: policy }] }
  fs.writeFileSync(file, JSON.stringify(body)) // JSON is YAML
  return file
}

/** A report-mode policy (nothing is deleted) over `cleaners`, with a scan budget of `maxScan` entries. */
const policy = (cleaners: Record<string, unknown>, overrides: Record<string, unknown> = {}) => ({
  mode: "report",
  check_interval_seconds: 3600,
  low_free_gb: 50,
  target_free_gb: 100,
  max_items_per_pass: 1000,
  max_bytes_per_pass: 10 * GIB,
  max_scan_items: 200_000,
  cleaners,
  ...overrides
})

const JanitorTest = (env: Record<string, string>, meter: Layer.Layer<DiskMeter>) => janitorTestLayer(env, meter)

interface CleanerPart {
  readonly status: string
  readonly reason?: string
  readonly scanned?: number
  readonly candidates?: ReadonlyArray<{ readonly path: string; readonly reason: string }>
  readonly skipped?: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

const part = (report: CleanupReport, name: string) => report.cleaners[name] as CleanerPart
const candidatePaths = (report: CleanupReport, name: string) => (part(report, name).candidates ?? []).map((c) => c.path)
const skippedPaths = (report: CleanupReport, name: string) =>
  (part(report, name).skipped ?? []).map((s) => `${s.reason}:${s.path}`)

const reportPass = (janitor: Janitor) => janitor.pass({ writer: "watch", toTarget: true })

/**
 * The budget stops `name`'s scan on the first pass; passes resume it from its checkpoint until it is
 * scanned (at most MAX_PASSES); the candidates (and skips) of those passes, together, are exactly those
 * of one pass with a budget large enough for the whole tree: nothing lost, nothing found twice.
 */
const resumesWithoutLossOrDuplicates = (name: string, registry: Registries, small: number) =>
  Effect.gen(function* () {
    const janitor = yield* Janitor
    registry()
    const reports = [yield* reportPass(janitor)]
    const first = reports[0]!
    assert.include(first.caps, "max_scan_items")
    assert.strictEqual(part(first, name).status, "partial")
    while (part(reports.at(-1)!, name).status !== "scanned" && reports.length < MAX_PASSES)
      reports.push(yield* reportPass(janitor))
    const last = reports.at(-1)!
    assert.strictEqual(part(last, name).status, "scanned", `${name} still not scanned after ${MAX_PASSES} passes`)
    assert.isAtLeast(reports.length, 3, "the tree should need several passes at this budget")
    for (const report of reports) {
      assert.strictEqual(report.outcome, "report_only")
      assert.deepStrictEqual(report.deleted, [])
      assert.isAtMost(report.scanned, small + 10) // a cleaner may overrun by one step, never by a tree
    }
    for (const report of reports.slice(0, -1)) {
      assert.strictEqual(part(report, name).status, "partial")
      assert.include(report.caps, "max_scan_items")
    }
    const resumed = reports.flatMap((r) => candidatePaths(r, name))
    const resumedSkips = reports.flatMap((r) => skippedPaths(r, name))

    // The same tree, one pass, a budget the whole tree fits in (a new policy: the checkpoint is dropped).
    registry.large()
    const whole = yield* reportPass(janitor)
    assert.strictEqual(part(whole, name).status, "scanned")
    assert.deepStrictEqual(whole.caps, [])
    const all = candidatePaths(whole, name)
    assert.isAbove(all.length, 0)
    assert.strictEqual(new Set(resumed).size, resumed.length, `a candidate was found twice: ${resumed}`)
    assert.deepStrictEqual([...resumed].sort(), [...all].sort())
    assert.strictEqual(new Set(resumedSkips).size, resumedSkips.length, "an item was skipped twice")
    assert.deepStrictEqual([...resumedSkips].sort(), [...skippedPaths(whole, name)].sort())
    return { reports, whole }
  })

type Registries = { (): string; readonly large: () => string }

/** The registry file for `cleaners`, written with the small budget, and again (`.large()`) with a large one. */
const registries = (dir: string, cleaners: Record<string, unknown>, small: number): Registries => {
  const write = () => registryWith(dir, "jan", policy(cleaners, { max_scan_items: small }))
  return Object.assign(write, {
    large: () => registryWith(dir, "jan", policy(cleaners, { max_scan_items: 200_000 }))
  })
}

describe("max_scan_items stops each cleaner's scan; later passes resume it from the checkpoint", () => {
  it.live("build_caches: the frontier resumes the walk; every cache is found exactly once", () => {
    const dir = temp("keel-budget-build-")
    const build = path.join(dir, "build")
    for (let i = 0; i < 8; i++) {
      const proj = path.join(build, `proj-${i}`)
      put(path.join(proj, "src", "main.rs"), "fn main() {}")
      put(path.join(proj, "docs", "README.md"), "# docs")
      cacheDir(path.join(proj, "target"))
      if (i % 3 === 0) cacheDir(path.join(proj, "young-cache"), { ageDays: 0 })
      if (i % 4 === 1) cacheDir(path.join(proj, "nested", "deeper", "target"))
    }
    const small = 20
    const registry = registries(dir, { build_caches: { min_age_seconds: 86_400, root: build } }, small)
    return Effect.gen(function* () {
      const { reports } = yield* resumesWithoutLossOrDuplicates("build_caches", registry, small)
      assert.isNotNull(reports[0]!.build_caches_resume_from)
      assert.isNull(reports.at(-1)!.build_caches_resume_from)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registry() },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("huggingface_cache: repos are resumed in name order after the last finished one", () => {
    const dir = temp("keel-budget-hub-")
    const hub = path.join(dir, "hub")
    for (let i = 0; i < 8; i++)
      hubRepo(hub, `models--org--m${i}`, { used: 2, orphans: 1 + (i % 2), staleSnapshot: i % 3 === 0 })
    // Each repo charges blobs + snapshots + 1 (5 to 7): two repos fit in 12, a third does not.
    const small = 12
    const registry = registries(dir, { huggingface_cache: { min_age_seconds: 86_400, root: hub } }, small)
    return Effect.gen(function* () {
      const { whole } = yield* resumesWithoutLossOrDuplicates("huggingface_cache", registry, small)
      assert.strictEqual(candidatePaths(whole, "huggingface_cache").length, 12)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registry() },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("weles_recordings: the path cursor resumes the walk through nested date directories", () => {
    const dir = temp("keel-budget-recs-")
    const recs = path.join(dir, "recordings")
    for (const month of ["2024-01", "2024-02", "2024-03"])
      for (const day of ["01", "02"])
        for (let k = 0; k < 3; k++)
          recording(path.join(recs, month, day, `cam-${k}.webm`), { proof: !(month === "2024-02" && k === 1) })
    const small = 9
    const registry = registries(dir, { weles_recordings: { min_age_seconds: 7 * 86_400, root: recs } }, small)
    return Effect.gen(function* () {
      const { whole } = yield* resumesWithoutLossOrDuplicates("weles_recordings", registry, small)
      assert.strictEqual(candidatePaths(whole, "weles_recordings").length, 16)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registry() },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("queue_workdirs: the job-id cursor resumes; finished jobs' trees are found exactly once", () => {
    const dir = temp("keel-budget-work-")
    const work = path.join(dir, "work")
    const tree = (id: string) => {
      put(path.join(work, id, "out", "log.txt"), "x".repeat(512))
      age(path.join(work, id), 2)
    }
    const small = 5
    const registry = registries(dir, { queue_workdirs: { min_age_seconds: 3600, root: work } }, small)
    return Effect.gen(function* () {
      const queue = yield* JobQueue
      for (let i = 0; i < 8; i++) {
        const job = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
        yield* queue.claim("w", 60_000)
        yield* queue.complete(job.id, "w", { exitCode: i % 3 === 0 ? 1 : 0 })
        tree(job.id)
      }
      for (let i = 0; i < 2; i++) {
        const cancelled = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
        yield* queue.cancel(cancelled.id)
        tree(cancelled.id)
      }
      const active = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
      tree(active.id)
      tree("job_not_in_this_queue")
      const { whole } = yield* resumesWithoutLossOrDuplicates("queue_workdirs", registry, small)
      assert.strictEqual(candidatePaths(whole, "queue_workdirs").length, 10)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registry() },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("backup_twins: the path cursor resumes; every twin is found exactly once", () => {
    const dir = temp("keel-budget-twins-")
    const replica = path.join(dir, "replica")
    const primary = path.join(dir, "primary")
    for (const folder of ["a", "b", "c", "d", "e"])
      for (let k = 0; k < 3; k++) {
        const rel = path.join(folder, `file-${k}.bin`)
        put(path.join(replica, rel), `bytes of ${rel}`)
        if (k === 0)
          put(path.join(primary, rel), `bytes of ${rel}`) // a twin
        else if (k === 1) put(path.join(primary, rel), `other bytes of ${rel}`) // differs
        // k === 2: only in the replica
      }
    const small = 6
    const registry = registries(dir, { backup_twins: { root: replica, primary_root: primary } }, small)
    return Effect.gen(function* () {
      const { reports, whole } = yield* resumesWithoutLossOrDuplicates("backup_twins", registry, small)
      assert.isNotNull(reports[0]!.backup_twins_cursor)
      assert.isNull(reports.at(-1)!.backup_twins_cursor)
      assert.strictEqual(candidatePaths(whole, "backup_twins").length, 5)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registry() },
          scriptedMeter(() => 0)
        )
      )
    )
  })
})

describe("max_pass_seconds: a budget past its deadline scans nothing and keeps the cursor", () => {
  const expired = () => scanBudget({ maxItems: 1e9, deadlineMs: Date.now() - 1 })

  it("build_caches: the frontier comes back unchanged (and a fresh walk keeps its root to resume)", async () => {
    const dir = temp("keel-deadline-build-")
    const build = path.join(dir, "build")
    const caches = ["p0", "p1"].map((p) => cacheDir(path.join(build, p, "target")))
    const rules = (budget: ReturnType<typeof scanBudget>) => ({
      root: build,
      minAgeSeconds: 86_400,
      nowMs: Date.now(),
      uid: process.getuid?.() ?? 0,
      refused: [],
      budget
    })
    const frontier = [path.join(build, "p1"), path.join(build, "p0")]
    const resumed = await scanBuildCaches(rules(expired()), frontier)
    assert.strictEqual(resumed.scanned, 0)
    assert.deepStrictEqual(resumed.candidates, [])
    assert.deepStrictEqual(resumed.frontier, frontier)
    const fresh = await scanBuildCaches(rules(expired()), [])
    assert.strictEqual(fresh.scanned, 0)
    assert.deepStrictEqual(fresh.frontier, [build]) // non-empty: the next pass starts the walk
    // Control: with time left, the same frontier finds both caches.
    const control = await scanBuildCaches(rules(scanBudget({ maxItems: 1e9, deadlineMs: Date.now() + 60_000 })))
    assert.deepStrictEqual(control.candidates.map((c) => c.path).sort(), caches)
  })

  it("weles_recordings and backup_twins: the cursor comes back unchanged, nothing scanned", () => {
    const dir = temp("keel-deadline-walks-")
    const recs = path.join(dir, "recs")
    for (const day of ["01", "02"]) for (let k = 0; k < 2; k++) recording(path.join(recs, day, `cam-${k}.webm`))
    const cursor = "01/cam-0.webm"
    const stopped = scanRecordings({ root: recs, minAgeSeconds: 0, nowMs: Date.now(), budget: expired(), cursor })
    assert.strictEqual(stopped.scanned, 0)
    assert.deepStrictEqual(stopped.candidates, [])
    assert.deepStrictEqual(stopped.skipped, [])
    assert.strictEqual(stopped.cursor, cursor)

    const replica = path.join(dir, "replica")
    const primary = path.join(dir, "primary")
    for (const rel of ["a/x.bin", "b/y.bin"]) {
      put(path.join(replica, rel), rel)
      put(path.join(primary, rel), rel)
    }
    const twins = scanBackupTwins({ replicaRoot: replica, primaryRoot: primary, cursor: "a/x.bin", budget: expired() })
    assert.strictEqual(twins.scanned, 0)
    assert.deepStrictEqual(twins.candidates, [])
    assert.strictEqual(twins.cursor, "a/x.bin")

    // Control: with time left, the walks do find what is after the cursor.
    const live = () => scanBudget({ maxItems: 1e9, deadlineMs: Date.now() + 60_000 })
    assert.strictEqual(
      scanRecordings({ root: recs, minAgeSeconds: 0, nowMs: Date.now(), budget: live(), cursor }).candidates.length,
      3
    )
    assert.deepStrictEqual(
      scanBackupTwins({ replicaRoot: replica, primaryRoot: primary, cursor: "a/x.bin", budget: live() }).candidates.map(
        (c) => path.relative(replica, c.path)
      ),
      ["b/y.bin"]
    )
  })

  it("a fresh path walk stopped before its first file does not claim to be complete", () => {
    const dir = temp("keel-deadline-fresh-")
    const recs = path.join(dir, "recs")
    recording(path.join(recs, "01", "cam-0.webm"))
    // cursor null in, cursor null out means "the walk completed": here it never started.
    const stopped = scanRecordings({
      root: recs,
      minAgeSeconds: 0,
      nowMs: Date.now(),
      budget: expired(),
      cursor: null
    })
    assert.strictEqual(stopped.scanned, 0)
    assert.isNotNull(stopped.cursor, "a walk the deadline stopped before any file returned null (= completed)")
  })
})

describe("one scan budget for the pass, shared round-robin by the cleaners", () => {
  it.live("the cleaner a full budget left out is scanned first on the next pass", () => {
    const dir = temp("keel-round-robin-")
    const hub = path.join(dir, "hub")
    // One repo charges 2 blobs + 1 snapshot + 1 = 4 (a first repo is scanned whole): a budget of 2 fits
    // huggingface_cache alone.
    hubRepo(hub, "models--org--only", { used: 1, orphans: 1 })
    const recs = path.join(dir, "recs")
    const uploaded = recording(path.join(recs, "cam-0.webm"))
    const file = registryWith(
      dir,
      "jan",
      policy(
        {
          huggingface_cache: { min_age_seconds: 86_400, root: hub },
          weles_recordings: { min_age_seconds: 7 * 86_400, root: recs }
        },
        { max_scan_items: 2 }
      )
    )
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const first = yield* reportPass(janitor)
      assert.strictEqual(part(first, "huggingface_cache").status, "scanned")
      assert.strictEqual(part(first, "weles_recordings").status, "not_scanned")
      assert.strictEqual(part(first, "weles_recordings").reason, "max_scan_items")
      const second = yield* reportPass(janitor)
      // Pass 2 starts with the cleaner pass 1 could not scan; pass 1 shows the cap that left it out.
      assert.deepStrictEqual(
        {
          pass2_recordings: part(second, "weles_recordings").status,
          pass2_candidates: candidatePaths(second, "weles_recordings"),
          pass1_caps: first.caps
        },
        { pass2_recordings: "scanned", pass2_candidates: [uploaded], pass1_caps: ["max_scan_items"] }
      )
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: file },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("a cleaner given the rest of a shared budget is partial, not scanned, when it reaches no file", () => {
    const dir = temp("keel-shared-rest-")
    const hub = path.join(dir, "hub")
    hubRepo(hub, "models--org--only", { used: 1, orphans: 1 }) // charges 4
    const recs = path.join(dir, "recs")
    const uploaded = recording(path.join(recs, "2024-05", "01", "cam-0.webm"))
    // 4 for the hub, 2 left: the recordings walk enters 2024-05 and 01, and stops before the file.
    const file = registryWith(
      dir,
      "jan",
      policy(
        {
          huggingface_cache: { min_age_seconds: 86_400, root: hub },
          weles_recordings: { min_age_seconds: 7 * 86_400, root: recs }
        },
        { max_scan_items: 6 }
      )
    )
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const first = yield* reportPass(janitor)
      assert.strictEqual(part(first, "huggingface_cache").status, "scanned")
      assert.deepStrictEqual(
        {
          status: part(first, "weles_recordings").status,
          candidates: candidatePaths(first, "weles_recordings"),
          caps: first.caps
        },
        { status: "partial", candidates: [], caps: ["max_scan_items"] },
        "the recordings walk was stopped by the budget before its first file"
      )
      const reports = [first]
      while (candidatePaths(reports.at(-1)!, "weles_recordings").length === 0 && reports.length < 5)
        reports.push(yield* reportPass(janitor))
      assert.deepStrictEqual(candidatePaths(reports.at(-1)!, "weles_recordings"), [uploaded])
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: file },
          scriptedMeter(() => 0)
        )
      )
    )
  })
})

describe("free space is measured and pursued per filesystem", () => {
  it("two roots on two filesystems: only the one under pressure is cleaned, to its target", async (context) => {
    const dir = temp("keel-two-fs-")
    const mountpoint = path.join(dir, "b")
    fs.mkdirSync(mountpoint)
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mountpoint], { stdio: "ignore" })
    } catch {
      context.skip("cannot mount a tmpfs here (not root, or no mount permission in this sandbox)")
      return
    }
    try {
      // Filesystem A (the test's tmpdir): a hub with two unreferenced blobs, eligible but not needed.
      const hub = path.join(dir, "hub")
      const repo = hubRepo(hub, "models--org--a", { used: 1, orphans: 2 })
      const hubBlobs = fs.readdirSync(path.join(repo, "blobs")).map((b) => path.join(repo, "blobs", b))
      // Filesystem B (the tmpfs): six uploaded recordings of 100 kB.
      const recs = path.join(mountpoint, "recs")
      const recordings = [0, 1, 2, 3, 4, 5].map((k) => recording(path.join(recs, `cam-${k}.webm`), { bytes: 100_000 }))
      const bytesUnder = (root: string): number =>
        fs
          .readdirSync(root, { withFileTypes: true })
          .reduce(
            (sum, e) =>
              sum +
              (e.isDirectory() ? bytesUnder(path.join(root, e.name)) : fs.lstatSync(path.join(root, e.name)).size),
            0
          )
      const initialB = bytesUnder(recs)
      const realB = fs.realpathSync(mountpoint)
      const freeA = 100 * GIB
      let baseB = 2 * GIB
      // B's free space rises by exactly the bytes deleted beneath it; A's never changes.
      const freeB = () => baseB + (initialB - bytesUnder(recs))
      const asked: Array<string> = []
      const meter = Layer.succeed(DiskMeter, {
        available: (p: string) =>
          Effect.sync(() => {
            asked.push(p)
            return p === realB || p.startsWith(`${realB}/`) ? freeB() : freeA
          })
      })
      // Low 1 GiB; target 1 GiB + 250 kB: B needs three recordings (100 kB and a proof each) gone.
      const targetBytes = GIB + 250_000
      const file = registryWith(
        dir,
        "jan",
        policy(
          {
            huggingface_cache: { min_age_seconds: 86_400, root: hub },
            weles_recordings: { min_age_seconds: 7 * 86_400, root: recs }
          },
          { mode: "enforce", low_free_gb: 1, target_free_gb: targetBytes / GIB }
        )
      )
      await Effect.runPromise(
        Effect.gen(function* () {
          const janitor = yield* Janitor
          // Both filesystems above the low watermark: a gated pass does nothing.
          const healthy = yield* janitor.pass({ writer: "watch" })
          assert.strictEqual(healthy.outcome, "healthy_noop")
          assert.strictEqual(healthy.filesystems.length, 2)

          // Only B below it: pressure on any one filesystem starts the pass (within the interval, too).
          baseB = GIB - 50_000
          const report = yield* janitor.pass({ writer: "watch" })
          assert.notInclude(["healthy_noop", "interval_noop"], report.outcome)
          assert.strictEqual(report.outcome, "reclaimed_target")

          // Nothing on A, though its blobs are eligible candidates.
          assert.deepStrictEqual(
            candidatePaths(report, "huggingface_cache").sort(),
            hubBlobs.filter((b) => path.basename(b).startsWith("orphan")).map((b) => fs.realpathSync(b))
          )
          for (const blob of hubBlobs) assert.isTrue(fs.existsSync(blob))
          // On B, in order, until B reached its target: three of six.
          assert.deepStrictEqual(
            report.deleted.map((d) => [d.cleaner, d.path]),
            recordings.slice(0, 3).map((r) => ["weles_recordings", path.join(fs.realpathSync(recs), path.basename(r))])
          )
          for (const r of recordings.slice(0, 3)) assert.isFalse(fs.existsSync(r))
          for (const r of recordings.slice(3)) assert.isTrue(fs.existsSync(r))
          assert.isAtLeast(freeB(), targetBytes)

          const byRoot = new Map(report.filesystems.map((f) => [f.roots.join(","), f]))
          assert.strictEqual(report.filesystems.length, 2)
          const a = byRoot.get(fs.realpathSync(hub))
          const b = byRoot.get(fs.realpathSync(recs))
          assert.isDefined(a, `filesystems: ${JSON.stringify(report.filesystems)}`)
          assert.isDefined(b, `filesystems: ${JSON.stringify(report.filesystems)}`)
          assert.deepStrictEqual(a, {
            roots: [fs.realpathSync(hub)],
            free_bytes_before: freeA,
            free_bytes_after: freeA,
            reached_target: true
          })
          assert.strictEqual(b!.free_bytes_before, GIB - 50_000)
          assert.strictEqual(b!.free_bytes_after, freeB())
          assert.isTrue(b!.reached_target)
          // The pass reports the tightest filesystem.
          assert.strictEqual(report.free_bytes_before, GIB - 50_000)
          assert.strictEqual(report.free_bytes_after, freeB())
          // Both filesystems were measured, each through its own root.
          assert.isTrue(asked.some((p) => p === fs.realpathSync(hub)))
          assert.isTrue(asked.some((p) => p === fs.realpathSync(recs)))
        }).pipe(Effect.provide(JanitorTest({ KEEL_REGISTRY: file }, meter)))
      )
    } finally {
      execFileSync("umount", [mountpoint])
    }
  })
})
