import { execFileSync, spawn, spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc, type Layer } from "effect"
import { janitorPolicy, janitorRegistry, janitorTestLayer, scriptedMeter } from "../support/janitor.js"
import {
  acquireLock,
  CACHEDIR_SIGNATURE,
  type DiskMeter,
  Janitor,
  JobQueue,
  parsePlist,
  protect,
  renderJanitorLaunchd,
  renderJanitorSystemd,
  scanBuildCaches,
  scanChromiumClones,
  scanHuggingfaceCache,
  twinRefusal,
  unitSettingsProblem,
  unlimitedBudget
} from "../support/keel.js"
import { runCtl, runCtlOk } from "../support/server.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const GIB = 1024 ** 3
const DAY = 86_400_000

const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/** A directory with a CACHEDIR.TAG (`tag` overrides its first line), `bytes` of payload, aged `ageDays`. */
const cacheDir = (dir: string, options: { tag?: string; bytes?: number; ageDays?: number } = {}) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${options.tag ?? CACHEDIR_SIGNATURE}\n# generated\n`)
  fs.writeFileSync(path.join(dir, "payload.bin"), Buffer.alloc(options.bytes ?? 1024))
  const when = new Date(Date.now() - (options.ageDays ?? 10) * DAY)
  fs.utimesSync(dir, when, when)
  return dir
}

const registryWith = janitorRegistry

const policy = janitorPolicy

const JanitorTest = (env: Record<string, string>, meter: Layer.Layer<DiskMeter>) => janitorTestLayer(env, meter)

describe("build_caches: rule 1 and rule 2 on real trees", () => {
  it("only tagged, signed, own, old, same-device directories reached without a symlink are candidates", async () => {
    const base = temp("keel-rule1-")
    const tree = path.join(base, "root")
    const outside = path.join(base, "outside")
    const eligible = cacheDir(path.join(tree, "proj", "target"))
    cacheDir(path.join(tree, "wrong-signature"), { tag: "Signature: 0000" })
    cacheDir(path.join(tree, "young"), { ageDays: 0 })
    const foreign = cacheDir(path.join(tree, "foreign-owner"))
    fs.chownSync(path.join(foreign, "CACHEDIR.TAG"), 4321, 4321)
    const linkedTag = path.join(tree, "linked-tag")
    fs.mkdirSync(linkedTag, { recursive: true })
    fs.writeFileSync(path.join(base, "real-tag"), `${CACHEDIR_SIGNATURE}\n`)
    fs.symlinkSync(path.join(base, "real-tag"), path.join(linkedTag, "CACHEDIR.TAG"))
    fs.utimesSync(linkedTag, new Date(Date.now() - 10 * DAY), new Date(Date.now() - 10 * DAY))
    cacheDir(outside) // valid, but only reachable through the symlink below
    fs.symlinkSync(outside, path.join(tree, "via-link"))
    fs.mkdirSync(path.join(tree, "untagged", "deep"), { recursive: true })
    const refusedState = cacheDir(path.join(tree, "janitor-state", "cache"))
    const hub = cacheDir(path.join(tree, "hub"))
    // A loop of symlinks must not trap the walk.
    fs.symlinkSync(tree, path.join(tree, "untagged", "deep", "loop"))

    const scan = await scanBuildCaches({
      root: tree,
      minAgeSeconds: 86_400,
      nowMs: Date.now(),
      uid: process.getuid?.() ?? 0,
      refused: protect([
        { path: path.join(tree, "janitor-state"), why: "janitor_state" },
        { path: hub, why: "model_hub" }
      ]),
      budget: unlimitedBudget()
    })
    assert.deepStrictEqual(
      scan.candidates.map((c) => c.path),
      [eligible]
    )
    // Its bytes (and what it contains) are surveyed by the pass, not by the walk.
    const reasons = Object.fromEntries(scan.skipped.map((s) => [path.relative(tree, s.path), s.reason]))
    assert.strictEqual(reasons["wrong-signature"], "tag_signature_mismatch")
    assert.strictEqual(reasons.young, "too_young")
    assert.strictEqual(reasons["foreign-owner"], "tag_owned_by_other_user")
    assert.strictEqual(reasons["linked-tag"], "tag_not_regular_file")
    assert.strictEqual(reasons["janitor-state"], "refused_janitor_state") // not even descended into
    assert.isTrue(fs.existsSync(refusedState))
    assert.strictEqual(reasons.hub, "refused_model_hub")
    assert.isUndefined(reasons["via-link"])
    assert.deepStrictEqual(scan.frontier, [])
  })

  it("a directory on another device is never a candidate (tmpfs mount; needs root)", async (context) => {
    const tree = temp("keel-rule1-dev-")
    const mountpoint = path.join(tree, "mounted")
    fs.mkdirSync(mountpoint)
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountpoint], { stdio: "ignore" })
    } catch {
      context.skip("cannot mount a tmpfs here (not root, or no mount permission in this sandbox)")
      return
    }
    try {
      cacheDir(path.join(mountpoint, "cache"))
      const scan = await scanBuildCaches({
        root: tree,
        minAgeSeconds: 86_400,
        nowMs: Date.now(),
        uid: process.getuid?.() ?? 0,
        refused: [],
        budget: unlimitedBudget()
      })
      assert.deepStrictEqual(scan.candidates, [])
      assert.deepStrictEqual(
        scan.skipped.map((s) => s.reason),
        ["other_device"]
      )
    } finally {
      execFileSync("umount", [mountpoint])
    }
  })

  it("randomized trees: under every budget, only eligible directories are ever removed", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            kind: fc.constantFrom("eligible", "young", "wrong-tag", "untagged", "foreign", "linked", "refused"),
            depth: fc.integer({ min: 0, max: 3 })
          }),
          { minLength: 1, maxLength: 12 }
        ),
        fc.integer({ min: 1, max: 5 }),
        async (items, maxItems) => {
          const tree = temp("keel-random-")
          const eligible = new Set<string>()
          const kept: Array<string> = []
          items.forEach((item, i) => {
            const dir = path.join(tree, ...Array.from({ length: item.depth }, (_, d) => `d${d}`), `item-${i}`)
            if (item.kind === "eligible") eligible.add(cacheDir(dir))
            else if (item.kind === "young") kept.push(cacheDir(dir, { ageDays: 0 }))
            else if (item.kind === "wrong-tag") kept.push(cacheDir(dir, { tag: "Signature: nope" }))
            else if (item.kind === "foreign") {
              kept.push(cacheDir(dir))
              fs.chownSync(path.join(dir, "CACHEDIR.TAG"), 4321, 4321)
            } else if (item.kind === "refused") kept.push(cacheDir(path.join(tree, "state", `item-${i}`)))
            else if (item.kind === "linked") {
              const target = cacheDir(path.join(os.tmpdir(), `keel-linked-${process.pid}-${i}-${Math.random()}`))
              kept.push(target)
              fs.mkdirSync(path.dirname(dir), { recursive: true })
              fs.symlinkSync(target, dir)
            } else {
              fs.mkdirSync(dir, { recursive: true })
              kept.push(dir)
            }
          })
          const scan = await scanBuildCaches({
            root: tree,
            minAgeSeconds: 86_400,
            nowMs: Date.now(),
            uid: process.getuid?.() ?? 0,
            refused: protect([{ path: path.join(tree, "state"), why: "janitor_state" }]),
            budget: unlimitedBudget()
          })
          for (const candidate of scan.candidates.slice(0, maxItems)) {
            if (!eligible.has(candidate.path)) return false
            fs.rmSync(candidate.path, { recursive: true })
          }
          return kept.every((dir) => fs.existsSync(dir))
        }
      ),
      { numRuns: 60 }
    )
  })
})

describe("janitor passes under random budgets", () => {
  it("only eligible items are ever removed, and no budget is exceeded", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("eligible", "young", "wrong-tag", "untagged", "foreign"), {
          minLength: 1,
          maxLength: 10
        }),
        fc.record({
          max_items_per_pass: fc.integer({ min: 1, max: 6 }),
          max_bytes_per_pass: fc.integer({ min: 1_000, max: 20_000 }),
          max_scan_items: fc.integer({ min: 5, max: 400 })
        }),
        async (kinds, budgets) => {
          const dir = temp("keel-random-pass-")
          const build = path.join(dir, "build")
          fs.mkdirSync(build)
          const eligible = new Set<string>()
          const kept: Array<string> = []
          kinds.forEach((kind, i) => {
            const item = path.join(build, `p${i % 3}`, `item-${i}`)
            if (kind === "eligible") eligible.add(cacheDir(item, { bytes: 1_500 }))
            else if (kind === "young") kept.push(cacheDir(item, { ageDays: 0 }))
            else if (kind === "wrong-tag") kept.push(cacheDir(item, { tag: "Signature: x" }))
            else if (kind === "foreign") {
              kept.push(cacheDir(item))
              fs.chownSync(path.join(item, "CACHEDIR.TAG"), 4321, 4321)
            } else {
              fs.mkdirSync(item, { recursive: true })
              kept.push(item)
            }
          })
          const report = await Effect.runPromise(
            Effect.flatMap(Janitor, (j) => j.pass({ writer: "watch", toTarget: true })).pipe(
              Effect.provide(
                JanitorTest(
                  { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, budgets)) },
                  scriptedMeter(() => 0)
                )
              )
            )
          )
          const deletedBytes = report.deleted.reduce((sum, d) => sum + d.bytes, 0)
          return (
            report.deleted.every((d) => eligible.has(d.path) && !fs.existsSync(d.path)) &&
            kept.every((item) => fs.existsSync(item)) &&
            report.deleted.length <= budgets.max_items_per_pass &&
            deletedBytes <= budgets.max_bytes_per_pass
          )
        }
      ),
      { numRuns: 25 }
    )
  }, 120_000)
})

describe("janitor passes: every outcome", () => {
  it.live(
    "never_run before the first pass; healthy_noop above the watermark; interval_noop within the interval",
    () => {
      const dir = temp("keel-outcomes-")
      const build = path.join(dir, "build")
      fs.mkdirSync(build)
      return Effect.gen(function* () {
        const janitor = yield* Janitor
        assert.isNull(yield* janitor.lastReport) // never_run
        const listing = yield* janitor.cleaners("jan")
        assert.isTrue(listing.declared)
        assert.deepStrictEqual(
          listing.cleaners.filter((c) => c.configured).map((c) => c.name),
          ["build_caches"]
        )
        assert.isFalse((yield* janitor.cleaners("elsewhere")).declared) // the reporting default
        const healthy = yield* janitor.pass({ writer: "watch" })
        assert.strictEqual(healthy.outcome, "healthy_noop")
        assert.strictEqual(healthy.writer, "watch")
        const again = yield* janitor.pass({ writer: "queue-agent" })
        assert.strictEqual(again.outcome, "interval_noop")
      }).pipe(
        Effect.provide(
          JanitorTest(
            { KEEL_REGISTRY: registryWith(dir, "jan", policy(build)) },
            scriptedMeter(() => 500 * GIB)
          )
        )
      )
    }
  )

  it.live("an invalid policy deletes nothing: invalid_or_unavailable_policy", () => {
    const dir = temp("keel-outcomes-")
    const file = path.join(dir, "registry.yml")
    fs.writeFileSync(
      file,
      "version: 1\ntargets:\n  - { name: jan, os: linux, channel: local, disk_cleanup: { mode: sometimes } }\n"
    )
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "invalid_or_unavailable_policy")
      assert.include(report.detail ?? "", "disk_cleanup.mode")
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: file },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("a host without a policy gets the reporting default: it reports and never deletes", () => {
    const dir = temp("keel-outcomes-")
    const home = path.join(dir, "home")
    const cache = cacheDir(path.join(home, "proj", "target"))
    // The default scans the home directory: point it at this test's tree.
    const realHome = process.env.HOME
    return Effect.gen(function* () {
      process.env.HOME = home
      yield* Effect.addFinalizer(() => Effect.sync(() => (process.env.HOME = realHome)))
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.strictEqual(report.outcome, "report_only")
      assert.strictEqual(report.mode, "report")
      assert.isTrue(fs.existsSync(cache))
    }).pipe(
      Effect.scoped,
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", undefined), HOME: home },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("pressure in enforce mode: reclaimed_target once the target is free; report mode is report_only", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    const a = cacheDir(path.join(build, "a"))
    const b = cacheDir(path.join(build, "b"))
    // Free space grows by 60 GiB per deleted cache: one deletion reaches the 100 GiB target.
    const free = () => (40 + 60 * [a, b].filter((d) => !fs.existsSync(d)).length) * GIB
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "reclaimed_target")
      assert.strictEqual(report.deleted.length, 1)
      assert.strictEqual([a, b].filter((d) => fs.existsSync(d)).length, 1)
    }).pipe(
      Effect.provide(JanitorTest({ KEEL_REGISTRY: registryWith(dir, "jan", policy(build)) }, scriptedMeter(free)))
    )
  })

  it.live("report mode scans and deletes nothing: report_only", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    const a = cacheDir(path.join(build, "a"))
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "report_only")
      assert.strictEqual((report.cleaners.build_caches as { candidates: Array<unknown> }).candidates.length, 1)
      assert.isTrue(fs.existsSync(a))
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { mode: "report" })) },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live(
    "budgets: the item cap stops the pass (cap_reached) and the goal is kept; then progress; then nothing",
    () => {
      const dir = temp("keel-outcomes-")
      const build = path.join(dir, "build")
      for (const name of ["a", "b", "c"]) cacheDir(path.join(build, name))
      return Effect.gen(function* () {
        const janitor = yield* Janitor
        const capped = yield* janitor.pass({ writer: "watch" })
        assert.strictEqual(capped.outcome, "cap_reached")
        assert.deepStrictEqual(capped.caps, ["max_items_per_pass"])
        assert.strictEqual(capped.deleted.length, 2)
        const progress = yield* janitor.pass({ writer: "watch" }) // the kept goal bypasses the interval gate
        assert.strictEqual(progress.outcome, "reclaimed_progress")
        const nothing = yield* janitor.pass({ writer: "watch" })
        assert.strictEqual(nothing.outcome, "no_eligible_items")
      }).pipe(
        Effect.provide(
          JanitorTest(
            { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { max_items_per_pass: 2 })) },
            scriptedMeter(() => 0)
          )
        )
      )
    }
  )

  it.live("a kept goal met without a deletion (space freed elsewhere) is healthy_noop, never reclaimed_target", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    for (const name of ["a", "b", "c", "d"]) cacheDir(path.join(build, name))
    let free = 0
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const capped = yield* janitor.pass({ writer: "watch" })
      assert.strictEqual(capped.outcome, "cap_reached")
      free = 10_000 * 1024 ** 3 // far above any target now
      const met = yield* janitor.pass({ writer: "watch" })
      assert.strictEqual(met.outcome, "healthy_noop")
      assert.strictEqual(met.deleted.length, 0)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { max_items_per_pass: 2 })) },
          scriptedMeter(() => free)
        )
      )
    )
  })

  it("backup_twins: a primary path that resolves into the replica (a symlink in the primary) is no twin", () => {
    const dir = temp("keel-twins-")
    const replica = path.join(dir, "rep")
    const primary = path.join(dir, "pri")
    for (const sub of ["a", "b"]) {
      fs.mkdirSync(path.join(replica, sub), { recursive: true })
      fs.writeFileSync(path.join(replica, sub, "x.bin"), "the same bytes")
    }
    fs.mkdirSync(primary)
    fs.symlinkSync(path.join(replica, "b"), path.join(primary, "a"))
    fs.symlinkSync(path.join(replica, "a"), path.join(primary, "b"))
    for (const sub of ["a", "b"])
      assert.strictEqual(
        twinRefusal(path.join(replica, sub, "x.bin"), path.join(primary, sub, "x.bin"), replica),
        "primary_in_replica"
      )
    // A directory whose name starts with ".." is inside the replica all the same.
    fs.mkdirSync(path.join(replica, "..c"))
    fs.writeFileSync(path.join(replica, "..c", "x.bin"), "the same bytes")
    fs.symlinkSync(path.join(replica, "..c"), path.join(primary, "c"))
    assert.strictEqual(
      twinRefusal(path.join(replica, "a", "x.bin"), path.join(primary, "c", "x.bin"), replica),
      "primary_in_replica"
    )
  })

  it.live("a candidate that stops being eligible before deletion is kept: partial_error", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    const a = cacheDir(path.join(build, "a"))
    const b = cacheDir(path.join(build, "b"))
    // After the first deletion, b's tag is rewritten (a build started using it again).
    const afterCandidate = (candidate: { path: string }) => {
      if (candidate.path === a) fs.writeFileSync(path.join(b, "CACHEDIR.TAG"), "not a tag\n")
    }
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", afterCandidate })
      assert.strictEqual(report.outcome, "partial_error")
      assert.deepStrictEqual(
        report.errors.map((e) => e.path),
        [b]
      )
      assert.isFalse(fs.existsSync(a))
      assert.isTrue(fs.existsSync(b))
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build)) },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("a running job on the host blocks build_caches: blocked_running_jobs", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    const a = cacheDir(path.join(build, "a"))
    return Effect.gen(function* () {
      const queue = yield* JobQueue
      yield* queue.submit({ kind: "command", target: "jan", argv: ["make"] })
      yield* queue.claim("w", 60_000)
      const report = yield* (yield* Janitor).pass({ writer: "queue-agent" })
      assert.strictEqual(report.outcome, "blocked_running_jobs")
      assert.isTrue(fs.existsSync(a))
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build)) },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live(
    "queue_workdirs: only finished jobs' old trees go; active and unknown jobs' trees are kept and reported",
    () => {
      const dir = temp("keel-workdirs-")
      const work = path.join(dir, "work")
      const old = new Date(Date.now() - 2 * DAY)
      const tree = (id: string, aged = true) => {
        fs.mkdirSync(path.join(work, id, "out"), { recursive: true })
        fs.writeFileSync(path.join(work, id, "out", "log.txt"), "x".repeat(2048))
        if (aged) fs.utimesSync(path.join(work, id), old, old)
        return path.join(work, id)
      }
      return Effect.gen(function* () {
        const queue = yield* JobQueue
        const done = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
        yield* queue.claim("w", 60_000)
        yield* queue.complete(done.id, "w", { exitCode: 0 })
        const active = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
        const fresh = yield* queue.submit({ kind: "command", target: "elsewhere", argv: ["true"] })
        yield* queue.cancel(fresh.id)
        const finishedTree = tree(done.id)
        const activeTree = tree(active.id)
        const youngTree = tree(fresh.id, false)
        const strangerTree = tree("job_not_in_this_queue")
        const report = yield* (yield* Janitor).pass({ writer: "queue-agent" })
        assert.strictEqual(report.outcome, "reclaimed_progress")
        assert.deepStrictEqual(
          report.deleted.map((d) => d.path),
          [finishedTree]
        )
        assert.isFalse(fs.existsSync(finishedTree))
        for (const kept of [activeTree, youngTree, strangerTree]) assert.isTrue(fs.existsSync(kept))
        const counts = (report.cleaners.queue_workdirs as { skipped_counts: Record<string, number> }).skipped_counts
        assert.deepStrictEqual(counts, { job_active: 1, too_young: 1, unknown_job: 1 })
      }).pipe(
        Effect.provide(
          JanitorTest(
            {
              KEEL_REGISTRY: registryWith(dir, "jan", {
                ...policy(path.join(dir, "none")),
                cleaners: { queue_workdirs: { min_age_seconds: 3600, root: work } }
              })
            },
            scriptedMeter(() => 0)
          )
        )
      )
    }
  )

  it.live(
    "huggingface_cache: unreferenced blobs and old .incomplete downloads go; a referenced blob never does",
    () => {
      const dir = temp("keel-hub-")
      const hub = path.join(dir, "hub")
      const repo = path.join(hub, "models--org--model")
      const old = new Date(Date.now() - 3 * DAY)
      fs.mkdirSync(path.join(repo, "blobs"), { recursive: true })
      fs.mkdirSync(path.join(repo, "refs"), { recursive: true })
      for (const blob of ["aaa", "bbb", "ccc", "ddd.incomplete", "eee.incomplete"])
        fs.writeFileSync(path.join(repo, "blobs", blob), blob.repeat(100))
      fs.utimesSync(path.join(repo, "blobs", "ddd.incomplete"), old, old)
      const snapshot = (rev: string, file: string, blob: string) => {
        fs.mkdirSync(path.join(repo, "snapshots", rev), { recursive: true })
        fs.symlinkSync(`../../blobs/${blob}`, path.join(repo, "snapshots", rev, file))
      }
      snapshot("rev1", "config.json", "aaa")
      snapshot("rev0", "model.bin", "ccc")
      fs.writeFileSync(path.join(repo, "refs", "main"), "rev1")
      return Effect.gen(function* () {
        const report = yield* (yield* Janitor).pass({ writer: "watch" })
        assert.deepStrictEqual(report.deleted.map((d) => path.basename(d.path)).sort(), ["bbb", "ddd.incomplete"])
        for (const kept of ["aaa", "ccc", "eee.incomplete"])
          assert.isTrue(fs.existsSync(path.join(repo, "blobs", kept)))
        assert.isTrue(fs.existsSync(path.join(repo, "snapshots", "rev0"))) // the policy keeps unreferenced snapshots
        const counts = (report.cleaners.huggingface_cache as { skipped_counts: Record<string, number> }).skipped_counts
        assert.deepStrictEqual(counts, {
          incomplete_download_in_progress: 1,
          referenced_by_snapshot: 2,
          unreferenced_snapshot_kept_by_policy: 1
        })
        // With the policy's consent the unreferenced snapshot goes; its blob only in a later scan, once it is gone.
        const withSnapshots = {
          root: hub,
          minAgeSeconds: 86_400,
          nowMs: Date.now(),
          deleteUnreferencedSnapshots: true,
          budget: unlimitedBudget(),
          cursor: null
        }
        const first = scanHuggingfaceCache(withSnapshots)
        assert.deepStrictEqual(
          first.candidates.map((c) => path.basename(c.path)),
          ["rev0"]
        )
        fs.rmSync(first.candidates[0]!.path, { recursive: true })
        assert.deepStrictEqual(
          scanHuggingfaceCache(withSnapshots).candidates.map((c) => path.basename(c.path)),
          ["ccc"]
        )
      }).pipe(
        Effect.provide(
          JanitorTest(
            {
              KEEL_REGISTRY: registryWith(dir, "jan", {
                ...policy(path.join(dir, "none")),
                cleaners: { huggingface_cache: { min_age_seconds: 86_400, root: hub } }
              })
            },
            scriptedMeter(() => 0)
          )
        )
      )
    }
  )

  it.live("weles_recordings: only old recordings whose upload proof matches their size and SHA-256 go", () => {
    const dir = temp("keel-recordings-")
    const recs = path.join(dir, "recordings")
    fs.mkdirSync(recs)
    const old = new Date(Date.now() - 30 * DAY)
    const recording = (
      name: string,
      options: { proof?: "good" | "bad-sha" | "bad-size" | "none"; aged?: boolean } = {}
    ) => {
      const file = path.join(recs, name)
      const bytes = Buffer.from(`${name} frames `.repeat(50))
      fs.writeFileSync(file, bytes)
      const sha = createHash("sha256").update(bytes).digest("hex")
      const proof = options.proof ?? "good"
      if (proof !== "none")
        fs.writeFileSync(
          `${file}.upload-proof.json`,
          JSON.stringify({
            file: name,
            size: proof === "bad-size" ? bytes.length + 1 : bytes.length,
            sha256: proof === "bad-sha" ? "0".repeat(64) : sha,
            uploaded_at: new Date().toISOString(),
            destination: "s3://recordings/x"
          })
        )
      if (options.aged !== false) fs.utimesSync(file, old, old)
      return file
    }
    const uploaded = recording("a.webm")
    const kept = [
      recording("no-proof.webm", { proof: "none" }),
      recording("wrong-sha.webm", { proof: "bad-sha" }),
      recording("wrong-size.webm", { proof: "bad-size" }),
      recording("young.webm", { aged: false })
    ]
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.deepStrictEqual(
        report.deleted.map((d) => d.path),
        [uploaded]
      )
      assert.isFalse(fs.existsSync(`${uploaded}.upload-proof.json`))
      for (const file of kept) assert.isTrue(fs.existsSync(file))
      const counts = (report.cleaners.weles_recordings as { skipped_counts: Record<string, number> }).skipped_counts
      assert.deepStrictEqual(counts, {
        no_upload_proof: 1,
        proof_sha256_mismatch: 1,
        proof_size_mismatch: 1,
        too_young: 1
      })
    }).pipe(
      Effect.provide(
        JanitorTest(
          {
            KEEL_REGISTRY: registryWith(dir, "jan", {
              ...policy(path.join(dir, "none")),
              cleaners: { weles_recordings: { min_age_seconds: 7 * 86_400, root: recs } }
            })
          },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live(
    "backup_twins: a replica goes only when the primary holds the same bytes; the same file is retained; the cursor resumes",
    () => {
      const dir = temp("keel-twins-")
      const replica = path.join(dir, "replica")
      const primary = path.join(dir, "primary")
      const put = (root: string, rel: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
        fs.writeFileSync(path.join(root, rel), text)
      }
      put(replica, "a/one.bin", "same bytes")
      put(primary, "a/one.bin", "same bytes")
      put(replica, "a/two.bin", "local edit")
      put(primary, "a/two.bin", "other bytes")
      put(replica, "b/only-here.bin", "not mirrored")
      put(primary, "c/hardlinked.bin", "one inode")
      fs.mkdirSync(path.join(replica, "c"), { recursive: true })
      fs.linkSync(path.join(primary, "c", "hardlinked.bin"), path.join(replica, "c", "hardlinked.bin"))
      put(replica, "d/three.bin", "same again")
      put(primary, "d/three.bin", "same again")
      return Effect.gen(function* () {
        const janitor = yield* Janitor
        const first = yield* janitor.pass({ writer: "watch", toTarget: true })
        assert.deepStrictEqual(
          first.deleted.map((d) => path.relative(replica, d.path)),
          ["a/one.bin"]
        )
        // max_scan_items 5 (directories count): a, a/one, a/two, b, b/only-here; resume after it.
        assert.strictEqual(first.backup_twins_cursor, "b/only-here.bin")
        const second = yield* janitor.pass({ writer: "watch", toTarget: true })
        assert.deepStrictEqual(
          second.deleted.map((d) => path.relative(replica, d.path)),
          ["d/three.bin"]
        )
        assert.isNull(second.backup_twins_cursor)
        const skipped = (second.cleaners.backup_twins as { skipped_counts: Record<string, number> }).skipped_counts
        assert.deepStrictEqual(skipped, { same_file_as_primary: 1 })
        for (const rel of ["a/two.bin", "b/only-here.bin", "c/hardlinked.bin"])
          assert.isTrue(fs.existsSync(path.join(replica, rel)))
        assert.isTrue(fs.existsSync(path.join(primary, "c", "hardlinked.bin")))
      }).pipe(
        Effect.provide(
          JanitorTest(
            {
              KEEL_REGISTRY: registryWith(dir, "jan", {
                ...policy(path.join(dir, "none"), { max_scan_items: 5 }),
                cleaners: { backup_twins: { root: replica, primary_root: primary } }
              })
            },
            scriptedMeter(() => 0)
          )
        )
      )
    }
  )

  it.live(
    "chromium_clones: nothing is eligible on Linux (no_eligible_items); on macOS only old code-sign clones",
    () => {
      const dir = temp("keel-clones-")
      const x = path.join(dir, "X")
      const clone = path.join(x, "com.google.Chrome.code_sign_clone")
      fs.mkdirSync(path.join(clone, "code_sign_clone", "Google Chrome.app"), { recursive: true })
      fs.writeFileSync(path.join(clone, "code_sign_clone", "Google Chrome.app", "Info.plist"), "<plist/>")
      fs.mkdirSync(path.join(x, "com.apple.Safari.code_sign_clone"))
      fs.mkdirSync(path.join(x, "unrelated"))
      const old = new Date(Date.now() - 3 * DAY)
      fs.utimesSync(clone, old, old)
      const onMac = scanChromiumClones({
        platform: "darwin",
        root: x,
        minAgeSeconds: 86_400,
        nowMs: Date.now(),
        budget: unlimitedBudget(),
        cursor: null
      })
      assert.deepStrictEqual(
        onMac.candidates.map((c) => c.path),
        [clone]
      )
      assert.deepStrictEqual(
        onMac.skipped.map((s) => s.reason),
        ["too_young"]
      )
      return Effect.gen(function* () {
        const report = yield* (yield* Janitor).pass({ writer: "watch" })
        assert.strictEqual(report.outcome, process.platform === "darwin" ? "reclaimed_progress" : "no_eligible_items")
        if (process.platform !== "darwin") {
          assert.strictEqual((report.cleaners.chromium_clones as { status: string }).status, "not_applicable")
          assert.isTrue(fs.existsSync(clone))
        }
      }).pipe(
        Effect.provide(
          JanitorTest(
            {
              KEEL_REGISTRY: registryWith(dir, "jan", {
                ...policy(path.join(dir, "none")),
                cleaners: { chromium_clones: { min_age_seconds: 86_400, root: x } }
              })
            },
            scriptedMeter(() => 0)
          )
        )
      )
    }
  )

  it.live("a changed root invalidates the checkpoint: the next pass walks the new root from its top", () => {
    const dir = temp("keel-checkpoint-")
    const first = path.join(dir, "first")
    const second = path.join(dir, "second")
    for (let i = 0; i < 6; i++) fs.mkdirSync(path.join(first, `dir-${i}`, "sub"), { recursive: true })
    const cache = cacheDir(path.join(second, "proj", "target"))
    const file = registryWith(dir, "jan", policy(first, { max_scan_items: 8 }))
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const capped = yield* janitor.pass({ writer: "watch", toTarget: true })
      assert.isNotNull(capped.build_caches_resume_from)
      registryWith(dir, "jan", policy(second, { max_scan_items: 8 }))
      const moved = yield* janitor.pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(
        moved.deleted.map((d) => d.path),
        [cache]
      )
      assert.strictEqual((moved.cleaners.build_caches as { root: string }).root, second)
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: file },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("an unfinished pressure pass keeps its goal after free space crosses the lower watermark", () => {
    const dir = temp("keel-goal-")
    const build = path.join(dir, "build")
    const caches = ["a", "b", "c"].map((name) => cacheDir(path.join(build, name)))
    // 40 GiB free at first (watermark 50, target 80); each deletion frees 20 GiB.
    const free = () => (40 + 20 * caches.filter((c) => !fs.existsSync(c)).length) * GIB
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const first = yield* janitor.pass({ writer: "watch" })
      assert.strictEqual(first.outcome, "cap_reached") // one item per pass
      assert.isAbove(free(), 50 * GIB) // now above the watermark, below the target
      const second = yield* janitor.pass({ writer: "watch" }) // not healthy_noop, not interval_noop: the goal holds
      assert.strictEqual(second.outcome, "reclaimed_target")
      const third = yield* janitor.pass({ writer: "watch" })
      assert.strictEqual(third.outcome, "interval_noop") // goal reached: ordinary observations are gated again
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { max_items_per_pass: 1, target_free_gb: 80 })) },
          scriptedMeter(free)
        )
      )
    )
  })

  it("the lock file is 0644 as stated, whatever the process umask (ctl serve's is 077)", () => {
    const stateDir = temp("keel-lock-mode-")
    const umask = process.umask(0o077)
    try {
      const held = acquireLock(stateDir, 60_000)
      assert.strictEqual(held.kind, "held")
      assert.strictEqual(fs.statSync(path.join(stateDir, "janitor.lock")).mode & 0o777, 0o644)
      if (held.kind === "held") held.release()
    } finally {
      process.umask(umask)
    }
  })

  it.live("a live lock holder: lock_busy, and the holder's state is left alone", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    fs.mkdirSync(build)
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const held = acquireLock(janitor.stateDir, 60_000)
      assert.strictEqual(held.kind, "held")
      const report = yield* janitor.pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "lock_busy")
      assert.isFalse(fs.existsSync(path.join(janitor.stateDir, "state.json")))
      if (held.kind === "held") held.release()
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build)) },
          scriptedMeter(() => 0)
        )
      )
    )
  })

  it.live("the scan budget checkpoints the frontier; the next pass resumes it; a changed root invalidates it", () => {
    const dir = temp("keel-outcomes-")
    const build = path.join(dir, "build")
    for (let i = 0; i < 6; i++) fs.mkdirSync(path.join(build, `dir-${i}`, "sub"), { recursive: true })
    cacheDir(path.join(build, "dir-5", "sub", "cache"))
    return Effect.gen(function* () {
      const janitor = yield* Janitor
      const first = yield* janitor.pass({ writer: "watch", toTarget: true })
      assert.include(first.caps, "max_scan_items")
      assert.isNotNull(first.build_caches_resume_from)
      let report = first
      for (let i = 0; i < 20 && report.build_caches_resume_from !== null; i++)
        report = yield* janitor.pass({ writer: "watch", toTarget: true })
      assert.isNull(report.build_caches_resume_from) // a completed traversal clears the checkpoint
      const state = JSON.parse(fs.readFileSync(path.join(janitor.stateDir, "state.json"), "utf8"))
      assert.isNull(state.checkpoints)
      assert.isFalse(fs.existsSync(path.join(build, "dir-5", "sub", "cache")))
    }).pipe(
      Effect.provide(
        JanitorTest(
          { KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { max_scan_items: 8 })) },
          scriptedMeter(() => 0)
        )
      )
    )
  })
})

const treeDigest = (dir: string): string => {
  const hash = createHash("sha256")
  const walk = (current: string) => {
    for (const name of fs.readdirSync(current).sort()) {
      const full = path.join(current, name)
      const stat = fs.lstatSync(full)
      hash.update(`${path.relative(dir, full)}|${stat.mode}|${stat.size}|${stat.mtimeMs}\n`)
      if (stat.isDirectory()) walk(full)
      else if (stat.isFile()) hash.update(fs.readFileSync(full))
    }
  }
  if (fs.existsSync(dir)) walk(dir)
  return hash.digest("hex")
}

describe("the watch writer's units", () => {
  it("the rendered systemd service and timer pass systemd-analyze verify; the plist parses", () => {
    const dir = temp("keel-janitor-units-")
    const options = {
      ctl: [process.execPath, path.join(root, "bin", "ctl.js")],
      intervalSeconds: 600,
      user: "root",
      environment: { KEEL_REGISTRY: "/etc/keel/registry.yml", KEEL_DATA_DIR: "/var/lib/keel", KEEL_HOST: "forge-1" }
    }
    const files = renderJanitorSystemd({ ...options, environmentFile: path.join(dir, "disk-cleanup.env") })
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
    // The unit runs on its own: its account, its settings file, every setting the pass needs.
    assert.include(files["keel-disk-cleanup.service"], "User=root\nGroup=root\n")
    assert.include(files["keel-disk-cleanup.service"], `EnvironmentFile=${path.join(dir, "disk-cleanup.env")}`)
    assert.strictEqual(
      files["disk-cleanup.env"],
      'KEEL_REGISTRY="/etc/keel/registry.yml"\nKEEL_DATA_DIR="/var/lib/keel"\nKEEL_HOST="forge-1"\n'
    )
    assert.include(
      renderJanitorSystemd({ ctl: ["ctl"], intervalSeconds: 60 })["keel-disk-cleanup.service"],
      "User=keel"
    )
    // A newline in a value would inject another setting: refused before rendering.
    assert.match(
      unitSettingsProblem({ ...options, environment: { KEEL_HOST: "h\nKEEL_VAULT_KEY=x" } }) ?? "",
      /one line/
    )
    assert.match(unitSettingsProblem({ ...options, user: "a b" }) ?? "", /account name/)
    const verify = spawnSync(
      "systemd-analyze",
      ["verify", path.join(dir, "keel-disk-cleanup.service"), path.join(dir, "keel-disk-cleanup.timer")],
      { encoding: "utf8" }
    )
    assert.strictEqual(verify.status, 0, verify.stderr)
    assert.strictEqual(verify.stderr.trim(), "")
    const plist = parsePlist(renderJanitorLaunchd(options)["dev.keel.disk-cleanup.plist"]) as Record<string, unknown>
    assert.deepStrictEqual((plist.ProgramArguments as Array<string>).slice(-3), ["disk-cleanup", "--once", "--timer"])
    assert.strictEqual(plist.StartInterval, 600)
    assert.strictEqual(plist.UserName, "root")
    assert.deepStrictEqual(plist.EnvironmentVariables, options.environment)
  })
})

describe("ctl space and ctl disk-cleanup, as real processes", () => {
  const ctl = path.join(root, "bin", "ctl.js")
  const setup = () => {
    const dir = temp("keel-space-")
    const build = path.join(dir, "build")
    cacheDir(path.join(build, "a"))
    cacheDir(path.join(build, "b"))
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registryWith(dir, "jan", policy(build, { low_free_gb: 1_000_000, target_free_gb: 1_000_001 })),
      KEEL_HOST: "jan",
      KEEL_LOG_LEVEL: "warning"
    }
    return { dir, build, env, state: path.join(dir, "data", "janitor") }
  }

  it("disk-cleanup --watch --json prints one compact report per pass, one per line", async () => {
    const { env } = setup()
    const child = spawn(process.execPath, [ctl, "disk-cleanup", "--watch", "--dry-run", "--interval", "1", "--json"], {
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
    })
    try {
      // A bound on a hang, not a timing: ctl's start-up alone takes 10–20 s on a loaded machine.
      for (let i = 0; i < 1200 && out.split("\n").filter((l) => l !== "").length < 2; i++)
        await new Promise((resolve) => setTimeout(resolve, 100))
    } finally {
      child.kill("SIGTERM")
    }
    const lines = out.split("\n").filter((l) => l !== "")
    assert.isAtLeast(lines.length, 2, out)
    for (const line of lines) assert.strictEqual(JSON.parse(line).outcome, "report_only")
  }, 180_000)

  it("disk-cleanup --dry-run creates nothing (no data dir, no database) and its text names the paths and the policy", async () => {
    const { build, dir, env } = setup()
    const text = await runCtlOk(["disk-cleanup", "--dry-run"], env)
    assert.isFalse(fs.existsSync(path.join(dir, "data")), "a preview creates no data dir and no keel.db")
    assert.include(text, "report_only [dry run]")
    assert.include(text, `policy: target jan, declared, from file registry ${path.join(dir, "registry.yml")}`)
    assert.include(text, `would delete ${path.join(build, "a")}`)
    assert.include(text, `would delete ${path.join(build, "b")}`)
  }, 120_000)

  it("a path with a line break is shown quoted in the text report: a directory name cannot forge report lines", async () => {
    const { build, env } = setup()
    const forged = path.join(build, "x\n  would delete /etc")
    cacheDir(forged)
    const text = await runCtlOk(["disk-cleanup", "--dry-run"], env)
    assert.notInclude(text.split("\n"), "  would delete /etc")
    assert.include(text, `would delete ${JSON.stringify(forged)}`)
  }, 120_000)

  it("reclaim --dry-run writes no state and deletes nothing (tree and state dir hashed before and after)", async () => {
    const { build, env, state } = setup()
    const before = [treeDigest(build), treeDigest(state)]
    const out = JSON.parse(
      await runCtlOk(["space", "reclaim", "jan", "--stage", "registry_cleanup", "--dry-run", "--json"], env)
    )
    assert.strictEqual(out.outcome, "report_only")
    assert.strictEqual(out.dry_run, true)
    assert.deepStrictEqual([treeDigest(build), treeDigest(state)], before)
  }, 120_000)

  it("reclaim usage mistakes (a blank or missing reason, neither or both of --dry-run and --apply): exit 2, nothing deleted", async () => {
    const { build, env, state } = setup()
    const before = [treeDigest(build), treeDigest(state)]
    for (const [args, says] of [
      [["--apply", "--reason", ""], "--apply needs --reason"],
      [["--apply", "--reason", "   "], "--apply needs --reason"],
      [["--apply"], "--apply needs --reason"],
      [[], "say --dry-run or --apply"],
      [["--dry-run", "--apply", "--reason", "why"], "say --dry-run or --apply"]
    ] as const) {
      const run = await runCtl(["space", "reclaim", "jan", ...args, "--json"], env)
      assert.strictEqual(run.code, 2, `${args.join(" ")}: ${run.stderr}`)
      assert.include(run.stderr, says)
      assert.strictEqual(run.stdout, "", "a usage error prints no report")
    }
    assert.deepStrictEqual([treeDigest(build), treeDigest(state)], before)
  }, 300_000)

  it("reclaim --apply records the reason and the result on the host; space report shows the pass", async () => {
    const { build, env } = setup()
    const applied = JSON.parse(
      await runCtlOk(["space", "reclaim", "jan", "--apply", "--reason", "disk alert #42", "--json"], env)
    )
    assert.strictEqual(applied.reason, "disk alert #42")
    assert.strictEqual(applied.deleted.length, 2)
    assert.deepStrictEqual(fs.readdirSync(build), [])
    const recorded = JSON.parse(await runCtlOk(["space", "report", "jan", "--json"], env))
    assert.strictEqual(recorded.cleanup_state.report.reason, "disk alert #42")
    assert.strictEqual(recorded.cleanup_state.outcome, applied.outcome)
    // The cleaners of a target the registry does not know: listed with the reason, and a failure (exit 1).
    const unknown = await runCtl(["space", "cleaners", "list", "nope", "--json"], env)
    assert.strictEqual(unknown.code, 1)
    assert.isNotNull(JSON.parse(unknown.stdout).policy_error)
    assert.include(unknown.stderr, "nope: no usable policy")
  }, 180_000)

  it("both writers share one pass, lock and state file: the queue agent's tick is recorded as such", async () => {
    const { build, env } = setup()
    await runCtlOk(["machine", "work", "--until-empty", "--janitor"], env)
    const recorded = JSON.parse(await runCtlOk(["space", "report", "jan", "--json"], env))
    assert.strictEqual(recorded.cleanup_state.report.writer, "queue-agent")
    assert.strictEqual(recorded.cleanup_state.outcome, "reclaimed_progress")
    assert.deepStrictEqual(fs.readdirSync(build), [])
    // The watch writer's next pass reads the same state: it is gated by the agent's pass.
    const watch = JSON.parse(await runCtlOk(["disk-cleanup", "--once", "--json"], env))
    assert.strictEqual(watch.writer, "watch")
    assert.strictEqual(watch.outcome, "no_eligible_items")
  }, 180_000)

  it("lock recovery: a SIGSTOPped holder's overdue lock is replaced, but nothing is deleted while it lives", async () => {
    const { build, env } = setup()
    const holdEnv = { ...env, KEEL_JANITOR_HOLD_MS: "60000" }
    const holder = spawn(process.execPath, [ctl, "disk-cleanup", "--once"], { env: holdEnv, stdio: "ignore" })
    const lockFile = path.join(env.KEEL_DATA_DIR, "janitor", "janitor.lock")
    const deadline = Date.now() + 120_000 // a bound on a hang: the holder's start-up is slow on a loaded machine
    while (!fs.existsSync(lockFile) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    holder.kill("SIGSTOP")
    try {
      const run = async (extra: Record<string, string> = {}) =>
        JSON.parse(await runCtlOk(["disk-cleanup", "--once", "--json"], { ...env, ...extra }))
      assert.strictEqual((await run()).outcome, "lock_busy")
      // Make the stopped holder's heartbeat overdue (policy max_pass_seconds is 30: overdue after 65 s).
      // The heartbeat is the lock file's mtime.
      const overdue = new Date(Date.now() - 120_000)
      fs.utimesSync(lockFile, overdue, overdue)
      const recovering = await run()
      assert.strictEqual(recovering.outcome, "lock_recovery_report_only")
      assert.strictEqual(fs.readdirSync(build).length, 2)
      holder.kill("SIGKILL")
      await new Promise((r) => holder.once("exit", r))
      const after = await run()
      assert.strictEqual(after.outcome, "reclaimed_progress")
      assert.strictEqual(fs.readdirSync(build).length, 0)
    } finally {
      holder.kill("SIGKILL")
    }
  }, 300_000)
})
