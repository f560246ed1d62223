import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { janitorTestLayer } from "../support/janitor.js"
import { CACHEDIR_SIGNATURE, DiskMeter, FleetRegistry, Janitor, kernelLocked, twinRefusal } from "../support/keel.js"

// The janitor's safety defects, each reproduced on a real tree with the pass as `ctl disk-cleanup --once`
// runs it (enforce mode, build_caches min_age 3600 s, free space never at target).

const HOUR = 3_600_000
const temp = (prefix: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))

const cacheDir = (dir: string, bytes = 4096) => {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "CACHEDIR.TAG"), `${CACHEDIR_SIGNATURE}\n`)
  fs.writeFileSync(path.join(dir, "payload.bin"), Buffer.alloc(bytes))
  return age(dir)
}

const age = (dir: string) => {
  const when = new Date(Date.now() - 48 * HOUR)
  fs.utimesSync(dir, when, when)
  return dir
}

const registryWith = (dir: string, cleaners: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const file = path.join(dir, "registry.yml")
  const policy = {
    mode: "enforce",
    check_interval_seconds: 3600,
    low_free_gb: 50,
    target_free_gb: 100,
    max_items_per_pass: 100,
    max_bytes_per_pass: 1024 ** 4,
    max_scan_items: 200_000,
    cleaners,
    ...extra
  }
  fs.writeFileSync(
    file,
    JSON.stringify({ version: 1, targets: [{ name: "jan", os: "linux", channel: "local", disk_cleanup: policy }] })
  )
  return file
}

const janitorLayer = (env: Record<string, string>, dataDir = temp("keel-safety-data-")) =>
  janitorTestLayer(env, Layer.succeed(DiskMeter, { available: () => Effect.succeed(0) }), dataDir)

const build = (root: string) => ({ build_caches: { min_age_seconds: 3600, root } })

const skippedReason = (report: { cleaners: Record<string, unknown> }, cleaner: string, where: string) =>
  (report.cleaners[cleaner] as { skipped: Array<{ path: string; reason: string }> }).skipped.find(
    (s) => s.path === where
  )?.reason

/**
 * A backup_twins replica and its primary holding the same `names`, and the janitor on them (enforcing, free space
 * never at target) with `databaseFile` as the database it protects.
 */
const twinsWithDatabase = (prefix: string, names: ReadonlyArray<string>) => {
  const dir = temp(prefix)
  const replica = path.join(dir, "rootp")
  const primary = path.join(dir, "primp")
  for (const root of [replica, primary]) {
    fs.mkdirSync(root, { recursive: true })
    for (const name of names) fs.writeFileSync(path.join(root, name), `bytes of ${name}`)
  }
  const layer = (databaseFile: string) =>
    janitorTestLayer(
      {
        KEEL_REGISTRY: registryWith(dir, { backup_twins: { root: replica, primary_root: primary } }),
        KEEL_JANITOR_STATE_DIR: path.join(dir, "state")
      },
      Layer.succeed(DiskMeter, { available: () => Effect.succeed(0) }),
      temp(`${prefix}data-`),
      databaseFile
    )
  return { replica, layer }
}

describe("janitor safety: what it must keep", () => {
  it.live("1. a tagged parent never swallows a protected root it contains (declared huggingface root)", () => {
    const dir = temp("keel-safety-1-")
    const root = path.join(dir, "root")
    const cache = cacheDir(path.join(root, "cache"))
    const hub = path.join(cache, "hf", "hub")
    fs.mkdirSync(path.join(hub, "models--org--m", "blobs"), { recursive: true })
    fs.writeFileSync(path.join(hub, "models--org--m", "blobs", "abc"), "weights")
    age(cache)
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      // The hub's own cleaner may take its unreferenced blob; build_caches may take nothing.
      assert.deepStrictEqual(
        report.deleted.filter((d) => d.cleaner === "build_caches"),
        []
      )
      assert.strictEqual(skippedReason(report, "build_caches", cache), "contains_protected_huggingface_cache_root")
      assert.isTrue(fs.existsSync(path.join(hub, "models--org--m", "blobs")))
      assert.isTrue(fs.existsSync(path.join(cache, "CACHEDIR.TAG")))
    }).pipe(
      Effect.provide(
        janitorLayer({
          KEEL_REGISTRY: registryWith(dir, { ...build(root), huggingface_cache: { root: hub, min_age_seconds: 3600 } })
        })
      )
    )
  })

  it.live("1. a tagged parent of the janitor's own state directory is refused; the lock and state survive", () => {
    const dir = temp("keel-safety-1b-")
    const root = path.join(dir, "home")
    const dotCache = cacheDir(path.join(root, ".cache"))
    const stateDir = path.join(dotCache, "keel-janitor")
    fs.mkdirSync(stateDir, { recursive: true })
    age(dotCache)
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(report.deleted, [])
      assert.strictEqual(skippedReason(report, "build_caches", dotCache), "contains_protected_janitor_state")
      assert.isTrue(fs.existsSync(path.join(stateDir, "state.json")))
    }).pipe(
      Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)), KEEL_JANITOR_STATE_DIR: stateDir }))
    )
  })

  it.live("1. Keel's data directory inside a tagged directory is never deleted with it", () => {
    const dir = temp("keel-safety-1c-")
    const root = path.join(dir, "root")
    const tagged = cacheDir(path.join(root, "var"))
    const dataDir = path.join(tagged, "keel-data")
    fs.mkdirSync(dataDir, { recursive: true })
    fs.writeFileSync(path.join(dataDir, "keel.db"), "precious")
    age(tagged)
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(report.deleted, [])
      assert.strictEqual(skippedReason(report, "build_caches", tagged), "contains_protected_data_dir")
      assert.strictEqual(fs.readFileSync(path.join(dataDir, "keel.db"), "utf8"), "precious")
    }).pipe(
      Effect.provide(
        janitorLayer(
          { KEEL_REGISTRY: registryWith(dir, build(root)), KEEL_JANITOR_STATE_DIR: path.join(dir, "state") },
          dataDir
        )
      )
    )
  })

  it.live("1. SQLite's -wal, -shm and -journal beside the database are the database: never deleted", () => {
    const names = ["keel.db", "keel.db-wal", "keel.db-shm", "keel.db-journal", "other.bin"]
    const { layer, replica } = twinsWithDatabase("keel-safety-1d-", names)
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(
        report.deleted.map((d) => d.path),
        [path.join(replica, "other.bin")]
      )
      for (const name of names.slice(0, 4)) {
        assert.strictEqual(skippedReason(report, "backup_twins", path.join(replica, name)), "refused_database", name)
        assert.isTrue(fs.existsSync(path.join(replica, name)), name)
      }
    }).pipe(Effect.provide(layer(path.join(replica, "keel.db"))))
  })

  it.live(
    "1. with the database file a symlink, the companions beside its target are protected (SQLite puts them there)",
    () => {
      const names = ["real.db", "real.db-wal", "real.db-shm", "other.bin"]
      const { layer, replica } = twinsWithDatabase("keel-safety-1f-", names)
      const linkDir = temp("keel-safety-1f-link-")
      fs.symlinkSync(path.join(replica, "real.db"), path.join(linkDir, "keel.db"))
      return Effect.gen(function* () {
        const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
        assert.deepStrictEqual(
          report.deleted.map((d) => d.path),
          [path.join(replica, "other.bin")]
        )
        for (const name of names.slice(0, 3)) assert.isTrue(fs.existsSync(path.join(replica, name)), name)
      }).pipe(Effect.provide(layer(path.join(linkDir, "keel.db"))))
    }
  )

  it("1. a primary that resolves outside the mirrored store (a symlink in it) proves no backup", () => {
    const dir = temp("keel-safety-1e-")
    const replica = path.join(dir, "replica")
    const primary = path.join(dir, "primary")
    const elsewhere = path.join(dir, "ext")
    for (const root of [replica, elsewhere]) {
      fs.mkdirSync(path.join(root), { recursive: true })
      fs.writeFileSync(path.join(root, "precious"), "the only other copy is not a backup")
    }
    fs.mkdirSync(primary)
    fs.mkdirSync(path.join(replica, "pl"))
    fs.renameSync(path.join(replica, "precious"), path.join(replica, "pl", "precious"))
    fs.symlinkSync(elsewhere, path.join(primary, "pl"))
    assert.strictEqual(
      twinRefusal(path.join(replica, "pl", "precious"), path.join(primary, "pl", "precious"), replica, primary),
      "primary_outside_mirror"
    )
  })

  it.live("2. a protected root declared through a symlink is recognised by its real path", () => {
    const dir = temp("keel-safety-2-")
    const root = path.join(dir, "root")
    fs.mkdirSync(root)
    fs.symlinkSync(root, path.join(dir, "data"))
    // The hub is declared as DIR/data/hf-hub; on disk it is DIR/root/hf-hub, tagged (a tool tagged it).
    const hub = cacheDir(path.join(root, "hf-hub"))
    const holder = cacheDir(path.join(root, "outer"))
    const recordings = path.join(holder, "recordings")
    fs.mkdirSync(recordings)
    age(holder)
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(report.deleted, [])
      assert.strictEqual(skippedReason(report, "build_caches", hub), "refused_huggingface_cache_root")
      assert.strictEqual(skippedReason(report, "build_caches", holder), "contains_protected_weles_recordings_root")
      assert.isTrue(fs.existsSync(path.join(hub, "payload.bin")))
    }).pipe(
      Effect.provide(
        janitorLayer({
          KEEL_REGISTRY: registryWith(dir, {
            ...build(root),
            huggingface_cache: { root: path.join(dir, "data", "hf-hub") },
            weles_recordings: { root: path.join(dir, "data", "outer", "recordings") }
          })
        })
      )
    )
  })

  it.live("3. a parent swapped for a link between scan and deletion is refused; the outside cache is untouched", () => {
    const dir = temp("keel-safety-3-")
    const root = path.join(dir, "root")
    const first = cacheDir(path.join(root, "a", "big-cache"), 1024 * 1024)
    const later = cacheDir(path.join(root, "p", "cache"))
    const outside = path.join(dir, "outside")
    const victim = cacheDir(path.join(outside, "cache"))
    const swapped: Array<string> = []
    const afterCandidate = (candidate: { path: string }) => {
      if (candidate.path !== first) return
      // While the janitor works, p is replaced by a link to a directory holding an old tagged cache.
      fs.renameSync(path.join(root, "p"), path.join(root, "p.moved"))
      fs.symlinkSync(outside, path.join(root, "p"))
      swapped.push(candidate.path)
    }
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true, afterCandidate })
      assert.deepStrictEqual(swapped, [first])
      assert.deepStrictEqual(
        report.deleted.map((d) => d.path),
        [first]
      )
      assert.strictEqual(report.outcome, "partial_error")
      assert.deepStrictEqual(
        report.errors.map((e) => e.path),
        [later]
      )
      assert.match(report.errors[0]!.error, /path_changed/)
      assert.isTrue(fs.existsSync(path.join(victim, "payload.bin")))
      assert.isTrue(fs.existsSync(path.join(victim, "CACHEDIR.TAG")))
      assert.isTrue(fs.existsSync(path.join(root, "p.moved", "cache", "payload.bin")))
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)) })))
  })

  it.live("3. a candidate replaced by another directory of the same name is refused (identity changed)", () => {
    const dir = temp("keel-safety-3b-")
    const root = path.join(dir, "root")
    const first = cacheDir(path.join(root, "a"))
    const later = cacheDir(path.join(root, "b"))
    const afterCandidate = (candidate: { path: string }) => {
      if (candidate.path !== first) return
      fs.renameSync(later, path.join(root, "b.old"))
      cacheDir(later) // same name, same tag, another inode: not what the scan proved eligible
    }
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true, afterCandidate })
      assert.deepStrictEqual(
        report.errors.map((e) => [e.path, /identity_changed/.test(e.error)]),
        [[later, true]]
      )
      assert.isTrue(fs.existsSync(path.join(later, "payload.bin")))
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)) })))
  })

  it.live("4. a deletion that fails midway keeps CACHEDIR.TAG, and the next pass finishes it", () => {
    const dir = temp("keel-safety-4-")
    const root = path.join(dir, "root")
    const cache = cacheDir(path.join(root, "cache"))
    for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(cache, `obj-${String(i).padStart(2, "0")}.o`), "x")
    const stuck = path.join(cache, "zz-stuck.o")
    fs.writeFileSync(stuck, "immutable")
    age(cache)
    const chattr = spawnSync("chattr", ["+i", stuck])
    return Effect.gen(function* () {
      if (chattr.status !== 0) return // no chattr here: covered by the mount test below
      const janitor = yield* Janitor
      const failed = yield* janitor.pass({ writer: "watch", toTarget: true })
      execFileSync("chattr", ["-i", stuck])
      assert.strictEqual(failed.outcome, "partial_error")
      assert.deepStrictEqual(failed.deleted, [])
      assert.isTrue(fs.existsSync(path.join(cache, "CACHEDIR.TAG")), "the tag is removed last")
      // The deletion refreshed the directory's mtime (too young now), but it is finished as a resumed removal.
      const resumed = yield* janitor.pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(
        resumed.deleted.map((d) => d.path),
        [cache]
      )
      assert.isFalse(fs.existsSync(cache))
    }).pipe(
      Effect.ensuring(Effect.sync(() => spawnSync("chattr", ["-i", stuck]))),
      Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)) }))
    )
  })

  it.live("4. a candidate holding a mount point is refused whole, and the mount is never crossed (needs root)", () => {
    const dir = temp("keel-safety-4b-")
    const root = path.join(dir, "root")
    const cache = cacheDir(path.join(root, "cache"))
    const mountpoint = path.join(cache, "mnt")
    fs.mkdirSync(mountpoint)
    age(cache)
    const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountpoint]).status === 0
    // A bind mount of a directory on the same filesystem (same st_dev): only the mount table shows it.
    const bindSource = path.join(dir, "elsewhere")
    fs.mkdirSync(bindSource)
    fs.writeFileSync(path.join(bindSource, "keep.txt"), "bound")
    const second = cacheDir(path.join(root, "second"))
    const bindPoint = path.join(second, "bound")
    fs.mkdirSync(bindPoint)
    age(second)
    const bound = spawnSync("mount", ["--bind", bindSource, bindPoint]).status === 0
    return Effect.gen(function* () {
      if (!mounted || !bound) return // not root or no mount permission: the dev check is covered in janitor.test.ts
      fs.writeFileSync(path.join(mountpoint, "inside.txt"), "on tmpfs")
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(report.deleted, [])
      assert.strictEqual(skippedReason(report, "build_caches", cache), "contains_mount_point")
      assert.strictEqual(skippedReason(report, "build_caches", second), "contains_mount_point")
      assert.strictEqual(fs.readFileSync(path.join(mountpoint, "inside.txt"), "utf8"), "on tmpfs")
      assert.strictEqual(fs.readFileSync(path.join(bindSource, "keep.txt"), "utf8"), "bound")
      assert.isTrue(fs.existsSync(path.join(cache, "payload.bin")))
    }).pipe(
      Effect.ensuring(
        Effect.sync(() => {
          if (mounted) spawnSync("umount", [mountpoint])
          if (bound) spawnSync("umount", [bindPoint])
        })
      ),
      Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)) }))
    )
  })

  it.live("5. a build_caches root spelled through a symlink is resolved once and the resolution reported", () => {
    const dir = temp("keel-safety-5-")
    const real = path.join(dir, "real-root")
    const cache = cacheDir(path.join(real, "proj", "target"))
    fs.symlinkSync(real, path.join(dir, "link-root"))
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      const part = report.cleaners.build_caches as { root: string; root_resolved_from: string | null }
      assert.strictEqual(part.root, real)
      assert.strictEqual(part.root_resolved_from, path.join(dir, "link-root"))
      assert.deepStrictEqual(
        report.deleted.map((d) => d.path),
        [cache]
      )
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(path.join(dir, "link-root"))) })))
  })

  it.live("5. a root that does not exist is reported with its reason, never as an empty scan", () => {
    const dir = temp("keel-safety-5b-")
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      const part = report.cleaners.build_caches as { status: string; reason: string }
      assert.strictEqual(part.status, "root_unavailable")
      assert.match(part.reason, /root_unreadable: ENOENT/)
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(path.join(dir, "missing"))) })))
  })
})

describe("janitor policy: never silently the default", () => {
  it.live("a KEEL_HOST that names no target is invalid_or_unavailable_policy, with the reason", () => {
    const dir = temp("keel-policy-")
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "invalid_or_unavailable_policy")
      assert.match(report.detail ?? "", /nosuch is not a target of the registry/)
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, {}), KEEL_HOST: "nosuch" })))
  })

  it.live("an unreadable registry is invalid_or_unavailable_policy, never the reporting default", () => {
    const dir = temp("keel-policy-")
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch" })
      assert.strictEqual(report.outcome, "invalid_or_unavailable_policy")
      assert.isNotNull(report.detail)
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: path.join(dir, "missing.yml") })))
  })

  it.live("a registry that was readable once and is gone now deletes nothing: no pass on a remembered policy", () => {
    const dir = temp("keel-policy-")
    const registry = registryWith(dir, build(dir))
    const cache = cacheDir(path.join(dir, "proj", "target"))
    return Effect.gen(function* () {
      // Another command read it while it was there: the last valid snapshot now holds its policy.
      yield* (yield* FleetRegistry).read()
      fs.rmSync(registry)
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.strictEqual(report.outcome, "invalid_or_unavailable_policy")
      assert.deepStrictEqual(report.deleted, [])
      assert.isTrue(fs.existsSync(cache))
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registry })))
  })

  it.live("the report says which target and which registry the policy came from", () => {
    const dir = temp("keel-policy-")
    const registry = registryWith(dir, build(dir))
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", dryRun: true, toTarget: true })
      assert.deepStrictEqual(report.policy_source, {
        target: "jan",
        kind: "file",
        location: registry,
        freshness: "current",
        declared: true
      })
      assert.strictEqual(report.trigger, "manual")
    }).pipe(Effect.provide(janitorLayer({ KEEL_REGISTRY: registry })))
  })
})

describe("janitor and running jobs: cannot tell is busy", () => {
  it.live("a host whose jobs are the control plane's (KEEL_CONTROL_PLANE_URL) does not clean build caches", () => {
    const dir = temp("keel-jobs-")
    const root = path.join(dir, "root")
    const cache = cacheDir(path.join(root, "cache"))
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.strictEqual(report.outcome, "blocked_running_jobs")
      // No grant to ask the control plane with: it cannot answer, so nobody can tell.
      assert.match(report.detail ?? "", /cannot tell which jobs run on jan: .*ROUTING_MISSING/)
      assert.isTrue(fs.existsSync(path.join(cache, "payload.bin")))
    }).pipe(
      Effect.provide(
        janitorLayer({
          KEEL_REGISTRY: registryWith(dir, build(root)),
          KEEL_CONTROL_PLANE_URL: "http://127.0.0.1:9"
        })
      )
    )
  })
})

describe("janitor lock: the kernel witnesses the holder", () => {
  it.live("a pass holds an flock on its lock file while it runs, released when it ends", () => {
    const dir = temp("keel-lock-")
    const root = path.join(dir, "root")
    cacheDir(path.join(root, "cache"))
    const stateDir = path.join(dir, "state")
    const lockFile = path.join(stateDir, "janitor.lock")
    const seen: Array<boolean | undefined> = []
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({
        writer: "watch",
        toTarget: true,
        afterCandidate: () => {
          seen.push(kernelLocked(lockFile))
        }
      })
      assert.strictEqual(report.deleted.length, 1)
      if (seen[0] === undefined) return // flock(1) missing: the pid check stands alone
      assert.deepStrictEqual(seen, [true])
      assert.isFalse(fs.existsSync(lockFile))
    }).pipe(
      Effect.provide(janitorLayer({ KEEL_REGISTRY: registryWith(dir, build(root)), KEEL_JANITOR_STATE_DIR: stateDir }))
    )
  })
})
