import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { Ed25519 } from "../support/keel.js"
import { script, writeReleaseTree } from "../support/releases.js"
import { runCtl } from "../support/server.js"

// Issue 19 through the binary: the signing key lives in the vault (`ctl release key`), an existing release tree
// signed by that key is imported (`ctl release catalog sync`), and `ctl release catalog audit` re-verifies the
// object store — exit 1 with the problem once a stored byte changes.

describe("ctl release", () => {
  it("key create|show, catalog sync and audit: exit codes, JSON, and nothing secret printed", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-release-cli-"))
    const registry = path.join(dir, "registry.yml")
    const writeRegistry = (release: Record<string, string>) =>
      fs.writeFileSync(
        registry,
        Yaml.stringify({ version: 1, settings: { release }, targets: [{ name: "box", os: "linux", channel: "local" }] })
      )
    writeRegistry({})
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = (args: ReadonlyArray<string>, input?: string) => runCtl(args, env, input)

    // Without a configured authority nothing can be verified.
    const unconfigured = await ctl(["release", "catalog", "audit", "--json"])
    assert.strictEqual(unconfigured.code, 1)
    assert.strictEqual(JSON.parse(unconfigured.stdout).error.code, "RELEASE_AUTHORITY_UNAVAILABLE")

    // A key made in the vault: its id and public key are printed, the private key is not.
    const created = await ctl(["release", "key", "create", "--item", "made-here", "--json"])
    assert.strictEqual(created.code, 0, created.stderr)
    const made = JSON.parse(created.stdout) as { key_id: string; public_key: string }
    assert.match(made.key_id, /^sha256:[0-9a-f]{64}$/)
    assert.notInclude(created.stdout, "private")
    assert.strictEqual((await ctl(["release", "key", "create", "--item", "made-here"])).code, 1)
    assert.deepInclude(
      JSON.parse((await ctl(["release", "key", "show", "--item", "made-here", "--json"])).stdout),
      made
    )

    // The fleet's key, brought in from elsewhere (on stdin), trusted by the registry.
    const key = Ed25519.generateKeyPair()
    assert.strictEqual(
      (await ctl(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))).code,
      0
    )
    writeRegistry({ signing_key_item: "release-signing", signing_key_id: key.key_id })
    const tree = path.join(dir, "tree")
    writeReleaseTree(path.join(dir, "staging"), tree, "1.0.0", script("ctl 1.0.0"), key)
    writeReleaseTree(path.join(dir, "staging"), tree, "1.1.0", script("ctl 1.1.0"), key)

    const synced = await ctl(["release", "catalog", "sync", "--root", tree, "--json"])
    assert.strictEqual(synced.code, 0, synced.stderr)
    assert.deepStrictEqual(
      (JSON.parse(synced.stdout) as { releases: Array<{ version: string; outcome: string }> }).releases.map(
        (r) => `${r.version}:${r.outcome}`
      ),
      ["1.0.0:imported", "1.1.0:imported"]
    )
    // Each import is a reconciled, completed run for its exact source: release_store's completion evidence.
    const runsDir = path.join(dir, "data", "objects", "release-runs")
    const reconciled = fs
      .readdirSync(runsDir)
      .map((id) => JSON.parse(fs.readFileSync(path.join(runsDir, id, "run.json"), "utf8")))
      .map((r) => `${r.inputs.version}:${r.state}:${r.steps.reconciled.by}:${r.created_at}`)
      .sort()
    assert.deepStrictEqual(reconciled, [
      "1.0.0:published:catalog sync:2026-11-24T00:00:00.000Z",
      "1.1.0:published:catalog sync:2026-11-24T00:00:00.000Z"
    ])
    // The source identity published is the signed manifest's: a tree's own source-revision.json saying another
    // revision, or not JSON at all, is refused before anything is written; without one, it is made from the manifest.
    const published = path.join(dir, "data", "objects", "releases", "keel", "1.0.0", "source-revision.json")
    assert.strictEqual(JSON.parse(fs.readFileSync(published, "utf8")).revision, "1".repeat(40))
    const forged = path.join(dir, "forged")
    writeReleaseTree(path.join(dir, "staging"), forged, "1.2.0", script("ctl 1.2.0"), key)
    const forgedVersion = fs.readdirSync(forged, { recursive: true }).find((p) => String(p).endsWith("1.2.0"))
    fs.writeFileSync(path.join(forged, String(forgedVersion), "source-revision.json"), "not json at all")
    const refusedSync = await ctl(["release", "catalog", "sync", "--root", forged, "--json"])
    assert.strictEqual(refusedSync.code, 1)
    assert.deepInclude(JSON.parse(refusedSync.stdout).releases[0], { version: "1.2.0", outcome: "refused" })
    assert.strictEqual(JSON.parse(refusedSync.stdout).releases[0].problems[0].code, "source_revision_mismatch")
    assert.isFalse(fs.existsSync(path.join(dir, "data", "objects", "releases", "keel", "1.2.0")))

    const human = await ctl(["release", "catalog", "audit"])
    assert.strictEqual(human.code, 0, human.stderr)
    assert.include(human.stdout, "ok       keel 1.0.0")
    assert.include(human.stdout, "2 release(s) verified")

    // One byte of a stored artifact changes: audit fails, naming it.
    const stored = path.join(dir, "data", "objects", "releases", "keel", "1.1.0", "release.tar.gz")
    const bytes = fs.readFileSync(stored)
    bytes[0] = (bytes[0] ?? 0) ^ 1
    fs.writeFileSync(stored, bytes)
    const audit = await ctl(["release", "catalog", "audit", "--json"])
    assert.strictEqual(audit.code, 1)
    const report = JSON.parse(audit.stdout) as {
      ok: boolean
      releases: Array<{ version: string; problems: Array<{ code: string }> }>
    }
    assert.isFalse(report.ok)
    assert.deepStrictEqual(
      report.releases.map((r) => [r.version, r.problems.map((p) => p.code)]),
      [
        ["1.0.0", []],
        ["1.1.0", ["artifact_mismatch"]]
      ]
    )
  }, 600_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine

  it("host declare-version writes the declared version through the registry's compare-and-set, comments kept", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-declare-"))
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      [
        "version: 1",
        "# the build host",
        "targets:",
        "  - name: box",
        "    os: linux",
        "    channel: local",
        "    binaries:",
        "      - { name: ctl, path: /usr/local/bin/ctl } # the tool",
        ""
      ].join("\n")
    )
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = (args: ReadonlyArray<string>) => runCtl(args, env)
    const declared = await ctl(["host", "declare-version", "box", "ctl", "1.4.2", "--json"])
    assert.strictEqual(declared.code, 0, declared.stderr)
    const answer = JSON.parse(declared.stdout) as { previous: string | null; version: string; audit_key: string }
    assert.deepInclude(answer, { previous: null, version: "1.4.2" })
    assert.match(answer.audit_key, /^state\/registry\/audit\//)
    const text = fs.readFileSync(registry, "utf8")
    assert.include(text, "# the build host")
    assert.include(text, "# the tool")
    assert.deepInclude((Yaml.parse(text) as { targets: Array<{ binaries: Array<object> }> }).targets[0]!.binaries[0]!, {
      name: "ctl",
      version: "1.4.2"
    })
    assert.strictEqual(
      JSON.parse((await ctl(["host", "declare-version", "box", "ctl", "1.4.3", "--json"])).stdout).previous,
      "1.4.2"
    )
    for (const [args, why] of [
      [["box", "agent", "1.0.0"], "declares no binary agent"],
      [["nowhere", "ctl", "1.0.0"], "is not a target"],
      [["box", "ctl", "1.0 beta"], "is not a version"]
    ] as const) {
      const refused = await ctl(["host", "declare-version", ...args, "--json"])
      assert.strictEqual(refused.code, 1)
      assert.strictEqual(JSON.parse(refused.stdout).error.code, "DECLARE_REFUSED")
      assert.include(JSON.parse(refused.stdout).error.detail, why)
    }
    assert.include(fs.readFileSync(registry, "utf8"), "version: 1.4.3")
  }, 300_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})
