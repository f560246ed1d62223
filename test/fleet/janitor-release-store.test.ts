import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { janitorTestLayer } from "../support/janitor.js"
import {
  canonicalBytes,
  compareVersions,
  DiskMeter,
  Janitor,
  ObjectStore,
  ReleaseCatalog,
  type RunRecord,
  runRecordKey
} from "../support/keel.js"

// Issue 19, the release_store cleaner (seed 002, disk-cleanup rules 3–6) on a real host-local release tree
// `<root>/<product>/<version>/`, the evidence (run records, canonical source-revision.json and release.json) in the
// control plane's object store, the pass as `ctl disk-cleanup --once` runs it (enforce, free space never at target).

const DAY = 86_400_000
const temp = (prefix: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
const source = (version: string) => ({
  revision: `${version}`.padEnd(40, "a"),
  tree: "b".repeat(40),
  sha256: `${version}`.padEnd(64, "c"),
  size: 10
})

const sourceRevision = (product: string, version: string, sha256 = source(version).sha256) =>
  canonicalBytes({ schema: "keel.source-revision/v1", product, version, ...source(version), sha256 })

/** A version's payload directory, aged `ageDays`, with its own source-revision.json unless told otherwise. */
const versionDir = (
  root: string,
  version: string,
  options: { ownSource?: boolean; installers?: boolean; ageDays?: number } = {}
) => {
  const dir = path.join(root, "tool", version)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "release.tar.gz"), Buffer.alloc(4096, 1))
  if (options.ownSource !== false)
    fs.writeFileSync(path.join(dir, "source-revision.json"), sourceRevision("tool", version))
  if (options.installers === true) {
    fs.mkdirSync(path.join(dir, "installers"))
    fs.writeFileSync(path.join(dir, "installers", "tool.pkg"), "pkg")
  }
  const when = new Date(Date.now() - (options.ageDays ?? 10) * DAY)
  fs.utimesSync(dir, when, when)
  return dir
}

const run = (
  version: string,
  state: RunRecord["state"],
  options: { createdDaysAgo?: number; channel?: string; sourceSha?: string } = {}
): RunRecord => ({
  schema: "keel.release-run/v1",
  run_id: `run-${version}-${state}`,
  generation: 3,
  state,
  inputs: {
    product: "tool",
    version,
    channel: options.channel ?? "stable",
    source: { ...source(version), sha256: options.sourceSha ?? source(version).sha256 },
    manifest_sha256: "d".repeat(64)
  },
  steps: {},
  failure: state === "failed" ? { step: "build", detail: "exit 1" } : null,
  created_at: new Date(Date.now() - (options.createdDaysAgo ?? 30) * DAY).toISOString(),
  updated_at: new Date().toISOString()
})

const registryWith = (dir: string, cleaner: Record<string, unknown>) => {
  const file = path.join(dir, "registry.yml")
  fs.writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      release_control: { generation: 1, versions: { tool: "1.2.0" } },
      targets: [
        {
          name: "jan",
          os: "linux",
          channel: "local",
          binaries: [{ name: "tool", path: "/usr/local/bin/tool", product: "tool", version: "1.1.0" }],
          disk_cleanup: {
            mode: "enforce",
            check_interval_seconds: 3600,
            low_free_gb: 50,
            target_free_gb: 100,
            max_items_per_pass: 100,
            max_bytes_per_pass: 1024 ** 4,
            max_scan_items: 200_000,
            cleaners: { release_store: cleaner }
          }
        }
      ]
    })
  )
  return file
}

const layer = (env: Record<string, string>, dataDir = temp("keel-release-store-data-")) =>
  Layer.provideMerge(
    ReleaseCatalog.Default,
    janitorTestLayer(env, Layer.succeed(DiskMeter, { available: () => Effect.succeed(0) }), dataDir)
  )

const reasons = (report: { cleaners: Record<string, unknown> }) =>
  Object.fromEntries(
    (report.cleaners.release_store as { skipped: Array<{ path: string; reason: string }> }).skipped.map((s) => [
      path.basename(s.path),
      s.reason
    ])
  )

describe("release_store", () => {
  it("versions compare as people read them", () => {
    assert.deepStrictEqual(["1.10.0", "1.9.2", "2.0.0-rc1", "1.9.10", "2.0.0"].sort(compareVersions), [
      "1.9.2",
      "1.9.10",
      "1.10.0",
      "2.0.0",
      "2.0.0-rc1"
    ])
  })

  it.live(
    "keeps what rule 3 names, refuses what rule 4 and 5 cannot prove, reclaims the rest; reservations stay",
    () => {
      const dir = temp("keel-release-store-")
      const root = path.join(dir, "store")
      const eligible = versionDir(root, "1.0.0") // a completed run for its exact source
      const fromCanonical = versionDir(root, "0.95.0", { ownSource: false }) // its identity from the object store
      versionDir(root, "1.1.0") // a host names it (targets[].binaries[].version)
      versionDir(root, "1.2.0") // release_control declares it
      versionDir(root, "1.3.0") // pinned by the cleaner
      versionDir(root, "1.4.0") // tool/current links to it
      versionDir(root, "1.5.0") // its run is still building
      versionDir(root, "1.6.0") // its run is young (published an hour ago)
      versionDir(root, "1.9.0") // among keep_newest 2
      versionDir(root, "2.0.0") // among keep_newest 2
      versionDir(root, "0.5.0") // the newest installable release of the candidate family
      versionDir(root, "0.9.0", { ownSource: false }) // no source-revision.json anywhere
      versionDir(root, "0.8.0") // its only run failed
      versionDir(root, "0.7.0") // a published run, but for another source
      versionDir(root, "0.6.0", { installers: true }) // an installer publication
      versionDir(root, "0.4.0") // tag-only: published, no pipeline run
      versionDir(root, "0.3.0", { ageDays: 0 }) // completed, but touched now
      versionDir(root, "0.2.0") // only a candidate tag's run published it: no completion evidence
      fs.symlinkSync("1.4.0", path.join(root, "tool", "current"))

      return Effect.gen(function* () {
        const store = yield* ObjectStore
        const put = (key: string, bytes: Uint8Array) => store.put(key, bytes)
        const records = [
          run("1.0.0", "published"),
          run("0.95.0", "published"),
          run("1.5.0", "building"),
          run("1.6.0", "published", { createdDaysAgo: 1 / 24 }),
          run("0.8.0", "failed"),
          run("0.7.0", "published", { sourceSha: "e".repeat(64) }),
          run("0.5.0", "published", { channel: "candidate" }),
          run("0.3.0", "published"),
          { ...run("0.2.0", "published"), steps: { tag: { name: "v0.2.0-rc1", kind: "candidate" } } }
        ]
        for (const record of records) yield* put(runRecordKey(record.run_id), canonicalBytes(record))
        yield* put("releases/tool/0.95.0/source-revision.json", sourceRevision("tool", "0.95.0"))
        // Published releases (commit markers): the candidate one is its family's newest installable.
        for (const [version, channel] of [
          ["0.5.0", "candidate"],
          ["0.4.0", "stable"],
          ["1.0.0", "stable"],
          ["1.9.0", "stable"],
          ["2.0.0", "stable"]
        ] as const)
          yield* put(
            `releases/tool/${version}/release.json`,
            canonicalBytes({ schema: "keel.release/v1", product: "tool", version, channel })
          )
        const catalog = yield* ReleaseCatalog
        yield* catalog.reserve("tool", "1.0.0", ["linux-x64"], source("1.0.0").revision)

        const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
        assert.deepStrictEqual(
          report.deleted.map((d) => [d.cleaner, path.relative(root, d.path)]),
          [
            ["release_store", "tool/0.95.0"],
            ["release_store", "tool/1.0.0"]
          ]
        )
        assert.isFalse(fs.existsSync(eligible))
        assert.isFalse(fs.existsSync(fromCanonical))
        assert.deepStrictEqual(reasons(report), {
          "0.2.0": "publication_completion_unverified",
          "0.3.0": "too_young",
          "0.4.0": "publication_completion_unverified",
          "0.5.0": "retained_newest_installable",
          "0.6.0": "installer_publication_untracked",
          "0.7.0": "publication_completion_unverified",
          "0.8.0": "publication_completion_unverified",
          "0.9.0": "source_identity_unverified",
          "1.1.0": "retained_named_by_host",
          "1.2.0": "retained_registry_declaration",
          "1.3.0": "retained_configuration_pin",
          "1.4.0": "retained_installed",
          "1.5.0": "retained_active_run",
          "1.6.0": "retained_young_run",
          "1.9.0": "retained_keep_newest",
          "2.0.0": "retained_keep_newest"
        })
        const cleaner = report.cleaners.release_store as { skipped_counts: Record<string, number> }
        assert.strictEqual(cleaner.skipped_counts.publication_completion_unverified, 4)
        for (const kept of Object.keys(reasons(report))) assert.isTrue(fs.existsSync(path.join(root, "tool", kept)))
        // Rule 6: the payload went, the version's reservations did not.
        assert.deepStrictEqual(
          (yield* catalog.reservations).map((r) => `${r.version}:${r.platform}`),
          ["1.0.0:*", "1.0.0:linux-x64"]
        )
        // The canonical objects are the control plane's: untouched.
        assert.isTrue((yield* store.head("releases/tool/1.0.0/release.json"))._tag === "Some")
      }).pipe(
        Effect.provide(
          layer({
            KEEL_REGISTRY: registryWith(dir, { root, keep_newest: 2, pins: ["tool/1.3.0"], min_age_seconds: 3600 })
          })
        )
      )
    }
  )

  it.live("without readable evidence nothing is reclaimed", () => {
    const dir = temp("keel-release-store-blind-")
    const root = path.join(dir, "store")
    versionDir(root, "1.0.0")
    versionDir(root, "1.1.0")
    versionDir(root, "1.2.0")
    return Effect.gen(function* () {
      // The control plane elsewhere, unreachable: no run can be read, so no completion is proven.
      const blind = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      assert.deepStrictEqual(blind.deleted, [])
      assert.strictEqual(reasons(blind)["1.0.0"], "publication_completion_unverified")
      assert.match(reasons(blind).store ?? "", /^evidence_unreadable: /)
      for (const version of ["1.0.0", "1.1.0", "1.2.0"]) assert.isTrue(fs.existsSync(path.join(root, "tool", version)))
    }).pipe(
      Effect.provide(
        layer({
          KEEL_REGISTRY: registryWith(dir, { root, keep_newest: 1, min_age_seconds: 0 }),
          KEEL_CONTROL_PLANE_URL: "http://127.0.0.1:9",
          KEEL_JANITOR_GRANT_FILE: path.join(dir, "no-such-grant")
        })
      )
    )
  })

  it.live("a root inside the control plane's object store is refused: canonical payloads are never a host's", () => {
    const dir = temp("keel-release-store-canonical-")
    const dataDir = temp("keel-release-store-data-")
    const canonical = path.join(dataDir, "objects", "releases")
    versionDir(canonical, "1.0.0")
    return Effect.gen(function* () {
      const report = yield* (yield* Janitor).pass({ writer: "watch", toTarget: true })
      const cleaner = report.cleaners.release_store as { status: string; reason: string }
      assert.strictEqual(cleaner.status, "root_refused")
      assert.include(cleaner.reason, "canonical release payloads are never deleted")
      assert.isTrue(fs.existsSync(path.join(canonical, "tool", "1.0.0")))
    }).pipe(
      Effect.provide(layer({ KEEL_REGISTRY: registryWith(dir, { root: canonical, min_age_seconds: 0 }) }, dataDir))
    )
  })
})
