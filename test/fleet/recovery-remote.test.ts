import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Yaml from "yaml"
import { Ed25519 } from "../support/keel.js"
import { script, sha256, writeReleaseTree } from "../support/releases.js"
import { runCtl } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 19 over a real sshd: a multi-megabyte binary streamed through the ssh channel's stdin (`ctl host release`),
// its SHA-256 read back on the host; then a recovery whose probe fails is rolled back on the remote host.

let sshd: TestSshd | undefined
beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => sshd?.stop())

describe.skipIf(!sshdAvailable)("binary delivery and recovery through an ssh channel", () => {
  it("delivers the exact binary over ssh stdin and rolls back a failed probe there", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-recover-remote-"))
    const key = Ed25519.generateKeyPair()
    const installed = path.join(dir, "remote", "bin", "ctl")
    fs.mkdirSync(path.dirname(installed), { recursive: true })
    fs.writeFileSync(installed, script("ctl old"), { mode: 0o755 })
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        settings: {
          release: { signing_key_item: "release-signing", signing_key_id: key.key_id },
          agent: { skarbiec: { secret_fields: ["fleet-ssh#private_key"] } }
        },
        targets: [
          {
            name: "remote",
            os: "linux",
            channel: sshChannel(sshd!),
            binaries: [{ name: "ctl", path: installed }]
          }
        ]
      })
    )
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = async (args: ReadonlyArray<string>, input?: string) => {
      const result = await runCtl(args, env, input)
      const parsed = (() => {
        try {
          return JSON.parse(result.stdout)
        } catch {
          return null
        }
      })()
      return { code: result.code, json: parsed, stderr: result.stderr, stdout: result.stdout }
    }
    await ctl(["vault", "item", "put", "fleet-ssh"], JSON.stringify({ private_key: sshd!.clientKey }))
    await ctl(["vault", "item", "put", "release-signing"], JSON.stringify({ private_key: key.private_key }))
    const tree = path.join(dir, "tree")
    const big = script("ctl 2.0.0", 0, 3 * 1024 * 1024)
    writeReleaseTree(path.join(dir, "staging"), tree, "2.0.0", big, key)
    writeReleaseTree(path.join(dir, "staging"), tree, "2.0.1", script("ctl 2.0.1 broken", 2), key)
    assert.strictEqual((await ctl(["release", "catalog", "sync", "--root", tree, "--json"])).code, 0)

    const delivered = await ctl(["host", "release", "remote", "--binary", "ctl", "--version", "2.0.0", "--json"])
    assert.strictEqual(delivered.code, 0, `${JSON.stringify(delivered.json)} ${delivered.stderr}`)
    assert.isNotNull(delivered.json, delivered.stdout.slice(0, 2000))
    assert.deepStrictEqual(
      delivered.json.steps.map((s: { step: string }) => s.step),
      ["download", "verify", "backup", "install", "resolver", "receipt"]
    )
    assert.strictEqual(delivered.json.installed.sha256, sha256(Buffer.from(big)))
    assert.strictEqual(sha256(fs.readFileSync(installed)), sha256(Buffer.from(big)))
    assert.strictEqual(execFileSync(`${installed}.prev`, ["--help"], { encoding: "utf8" }).trim(), "ctl old")

    const broken = await ctl(["host", "recover", "remote", "--release", "2.0.1", "--json"])
    assert.strictEqual(broken.code, 1)
    assert.isTrue(broken.json.rolled_back)
    assert.strictEqual(execFileSync(installed, ["--help"], { encoding: "utf8" }).trim(), "ctl 2.0.0")
    assert.deepStrictEqual(fs.readdirSync(path.dirname(installed)).sort(), ["ctl", "ctl.prev", "ctl.release.json"])

    // The delivery secret (the ssh identity) must be one agent.skarbiec.secret_fields allows: else nothing moves.
    const document = Yaml.parse(fs.readFileSync(registry, "utf8"))
    document.settings.agent.skarbiec.secret_fields = []
    fs.writeFileSync(registry, Yaml.stringify(document))
    const unlisted = await ctl(["host", "release", "remote", "--binary", "ctl", "--version", "2.0.0", "--json"])
    assert.strictEqual(unlisted.code, 1)
    assert.strictEqual(unlisted.json.error.code, "RECOVERY_REFUSED")
    assert.include(unlisted.json.error.detail, "fleet-ssh#private_key")
    assert.strictEqual(execFileSync(installed, ["--help"], { encoding: "utf8" }).trim(), "ctl 2.0.0")
    // A bound on a hang: every call starts ctl here and again on the remote, 10–20 s apiece on a loaded machine.
  }, 600_000)
})
