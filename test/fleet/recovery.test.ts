import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import * as Yaml from "yaml"
import { Ed25519 } from "../support/keel.js"
import { script, sha256, signatureOf, writeReleaseTree } from "../support/releases.js"
import { runCtl } from "../support/server.js"

// Issue 19, binary recovery on a real binary (a small script the test builds and packs with tar): the exact
// signed release installed through the raw host channel with the previous binary kept, a failed probe rolled back
// atomically (or the invalid install removed when there was none), and a flipped byte, a signature by another key
// or a manifest of another version refused before anything reaches the host — the prior binary still working.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-recover-"))
const supervisorDir = path.join(dir, "supervisor")
afterAll(() => {
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      const run = JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")) as { supervisor_pid: number }
      try {
        process.kill(run.supervisor_pid, "SIGTERM")
      } catch {}
    }
})

const key = Ed25519.generateKeyPair()
const releaseTree = (root: string, version: string, script: string) =>
  writeReleaseTree(path.join(dir, "staging"), root, version, script, key)

describe("ctl host recover", () => {
  it("installs the exact signed binary, rolls back a failed probe, refuses tampered releases", async () => {
    const installed = path.join(dir, "host", "bin", "ctl")
    fs.mkdirSync(path.dirname(installed), { recursive: true })
    fs.writeFileSync(installed, script("ctl old"), { mode: 0o755 })
    const fresh = path.join(dir, "fresh", "bin", "ctl")
    const agent = path.join(dir, "agent")
    fs.copyFileSync("/bin/sleep", agent)
    fs.chmodSync(agent, 0o755)
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        settings: { release: { signing_key_item: "release-signing", signing_key_id: key.key_id } },
        targets: [
          {
            name: "box",
            os: "linux",
            channel: "local",
            binaries: [{ name: "ctl", path: installed }],
            services: [
              {
                name: "recovery-agent",
                unit: path.join(dir, "units", "recovery-agent.service"),
                program: agent,
                args: ["300"],
                kind: "recovery-managed"
              }
            ]
          },
          { name: "fresh", os: "linux", channel: "local", binaries: [{ name: "ctl", path: fresh }] }
        ]
      })
    )
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning",
      KEEL_SERVICE_MANAGER: "supervisor",
      KEEL_SUPERVISOR_DIR: supervisorDir
    }
    const ctl = (args: ReadonlyArray<string>, input?: string) => runCtl(args, env, input)
    const recover = async (target: string, version?: string) => {
      const result = await ctl([
        "host",
        "recover",
        target,
        ...(version === undefined ? [] : ["--release", version]),
        "--json"
      ])
      return { code: result.code, answer: JSON.parse(result.stdout || "null"), stderr: result.stderr }
    }
    const help = (file: string) => execFileSync(file, ["--help"], { encoding: "utf8" }).trim()
    const steps = (answer: { steps: Array<{ step: string; ok: boolean }> }) =>
      answer.steps.map((s) => `${s.step}:${s.ok ? "ok" : "failed"}`)

    assert.strictEqual(
      (await ctl(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))).code,
      0
    )
    const tree = path.join(dir, "tree")
    releaseTree(tree, "1.0.0", script("ctl 1.0.0"))
    releaseTree(tree, "1.0.1", script("ctl 1.0.1 is broken", 3))
    for (const version of ["1.0.2", "1.0.3", "1.0.4"]) releaseTree(tree, version, script(`ctl ${version}`))
    const synced = await ctl(["release", "catalog", "sync", "--root", tree, "--json"])
    assert.strictEqual(synced.code, 0, synced.stdout + synced.stderr)

    // A good release: verified, the previous binary kept, the new one in place and answering, then host recovery.
    const good = await recover("box", "1.0.0")
    assert.strictEqual(good.code, 0, JSON.stringify(good.answer) + good.stderr)
    assert.deepStrictEqual(steps(good.answer), [
      "download:ok",
      "verify:ok",
      "backup:ok",
      "install:ok",
      "resolver:ok",
      "receipt:ok",
      "recovery:ok"
    ])
    assert.deepInclude(good.answer, { ok: true, rolled_back: false, release: { product: "keel", version: "1.0.0" } })
    assert.strictEqual(good.answer.object_api.status, "available")
    assert.strictEqual(help(installed), "ctl 1.0.0")
    assert.strictEqual(help(`${installed}.prev`), "ctl old")
    assert.strictEqual(good.answer.installed.sha256, sha256(fs.readFileSync(installed)))
    assert.include(good.answer.steps.at(-1).detail, "recovery-agent: created")
    // Nothing staged is left beside the binary; the receipt says which release it is.
    assert.deepStrictEqual(fs.readdirSync(path.dirname(installed)).sort(), ["ctl", "ctl.prev", "ctl.release.json"])
    assert.deepInclude(JSON.parse(fs.readFileSync(`${installed}.release.json`, "utf8")), {
      schema: "keel.delivery/v1",
      product: "keel",
      version: "1.0.0",
      binary_sha256: good.answer.installed.sha256
    })

    // A binary whose probe fails: the previous one is renamed back, and the run says so (exit 1).
    const before = fs.statSync(installed)
    const broken = await recover("box", "1.0.1")
    assert.strictEqual(broken.code, 1)
    assert.deepStrictEqual(steps(broken.answer), [
      "download:ok",
      "verify:ok",
      "backup:ok",
      "install:ok",
      "resolver:failed",
      "rollback:ok"
    ])
    assert.isTrue(broken.answer.rolled_back)
    assert.strictEqual(help(installed), "ctl 1.0.0")
    assert.strictEqual(fs.statSync(installed).ino, before.ino, "the very previous file is back")

    // A delivery cut off between its install and its receipt (killed while its probe ran) left an unverified
    // binary in place: the next run keeps <path>.prev — the last verified binary — as the one to roll back to.
    const cutOff = `${installed}.cut-off`
    fs.writeFileSync(cutOff, script("ctl 1.0.1 is broken", 3), { mode: 0o755 })
    fs.renameSync(cutOff, installed)
    const retried = await recover("box", "1.0.1")
    assert.strictEqual(retried.code, 1)
    assert.deepStrictEqual(steps(retried.answer), [
      "download:ok",
      "verify:ok",
      "backup:ok",
      "install:ok",
      "resolver:failed",
      "rollback:ok"
    ])
    assert.include(retried.answer.steps[2].detail, "is not the binary its receipt describes")
    assert.strictEqual(help(installed), "ctl 1.0.0", "the last verified binary is back")
    assert.strictEqual(help(`${installed}.prev`), "ctl 1.0.0")

    // Tampered in the object store after publication: refused at verify, nothing reaches the host.
    const stored = (version: string, file: string) =>
      path.join(dir, "data", "objects", "releases", "keel", version, file)
    const flipped = fs.readFileSync(stored("1.0.2", "release.tar.gz"))
    flipped[20] = (flipped[20] ?? 0) ^ 0xff
    fs.writeFileSync(stored("1.0.2", "release.tar.gz"), flipped)
    const rogue = Ed25519.generateKeyPair()
    fs.writeFileSync(
      stored("1.0.3", "release.sig"),
      signatureOf(rogue, fs.readFileSync(stored("1.0.3", "release.json")))
    )
    fs.copyFileSync(stored("1.0.0", "release.json"), stored("1.0.4", "release.json"))
    fs.copyFileSync(stored("1.0.0", "release.sig"), stored("1.0.4", "release.sig"))
    for (const [version, code] of [
      ["1.0.2", "artifact_mismatch"],
      ["1.0.3", "untrusted_key"],
      ["1.0.4", "manifest_mismatch"]
    ] as const) {
      const refused = await recover("box", version)
      assert.strictEqual(refused.code, 1, version)
      assert.deepStrictEqual(steps(refused.answer), ["download:ok", "verify:failed"], version)
      assert.include(refused.answer.steps[1].detail, code, version)
      assert.strictEqual(help(installed), "ctl 1.0.0", version)
      assert.strictEqual(fs.statSync(installed).ino, before.ino, version)
    }
    // ... and catalog audit says the same.
    const audit = JSON.parse((await ctl(["release", "catalog", "audit", "--json"])).stdout) as {
      releases: Array<{ version: string; problems: Array<{ code: string }> }>
    }
    const audited = (version: string) => audit.releases.find((r) => r.version === version)?.problems.map((p) => p.code)
    assert.deepStrictEqual(audited("1.0.0"), [])
    assert.deepStrictEqual(audited("1.0.1"), [])
    assert.deepStrictEqual(audited("1.0.2"), ["artifact_mismatch"])
    assert.deepStrictEqual(audited("1.0.3"), ["untrusted_key"])
    assert.includeMembers(audited("1.0.4") ?? [], ["manifest_mismatch", "catalog_mismatch"])

    // No previous binary and a failed probe: the invalid install is removed.
    const none = await recover("fresh", "1.0.1")
    assert.strictEqual(none.code, 1)
    assert.deepInclude(none.answer.previous, { kept: false })
    assert.include(none.answer.steps.at(-1).detail, "was removed")
    assert.deepStrictEqual(fs.readdirSync(path.dirname(fresh)), [])

    // Without --release: the host recovery only, no binary change; an unknown target is refused.
    const plain = await recover("box")
    assert.strictEqual(plain.code, 0)
    assert.deepStrictEqual(steps(plain.answer), ["recovery:ok"])
    assert.strictEqual(plain.answer.object_api.status, "not_used")
    const unknown = await recover("nowhere", "1.0.0")
    assert.strictEqual(unknown.code, 1)
    assert.strictEqual(unknown.answer.error.code, "RECOVERY_REFUSED")
  }, 900_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})
