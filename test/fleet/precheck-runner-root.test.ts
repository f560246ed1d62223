import { execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { type FakeGithub, startFakeGithub } from "../support/fake-github.js"
import { ctlBin } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 20, "root on the target": the lifecycle needs root there — the channel's user is root, or each root command
// goes through `sudo -n`. A channel user who is neither is refused with a clear error, and nothing is installed.

const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
const ready = process.getuid?.() === 0 && sshdAvailable && has("useradd") && has("sudo")
const user = `keel-nr${process.pid % 100_000}`
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-root-"))
fs.chmodSync(dir, 0o755)
let sshd: TestSshd | undefined
let github: FakeGithub | undefined

beforeAll(async () => {
  if (!ready) return
  execFileSync("useradd", ["--create-home", "--shell", "/bin/sh", user])
  // No password, but not locked ("!"): sshd without PAM refuses a locked account even with a key.
  execFileSync("usermod", ["-p", "*", user])
  sshd = await startSshd({ user })
  github = await startFakeGithub({ repositories: [{ full_name: "acme/app", id: 101, private: true }] })
}, 180_000) // a bound on a hang: sshd's start is slow on a loaded machine

afterAll(() => {
  sshd?.stop()
  void github?.close()
  if (ready) spawnSync("userdel", ["--remove", user])
  fs.rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!ready)("a channel user without root (needs root, sshd, sudo)", () => {
  it("is refused RUNNER_HOST_UNAVAILABLE, with nothing installed", async () => {
    const registry = path.join(dir, "registry.json")
    const runnerRoot = path.join(dir, "runner")
    fs.writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        targets: [
          {
            name: "plain-host",
            os: "linux",
            channel: sshChannel(sshd!),
            precheck_runner: {
              url: `${github!.url}/acme`,
              api_url: github!.url,
              runner_group: "precheck",
              account: `keel-nx${process.pid % 100_000}`,
              runner_root: runnerRoot,
              archive: {
                version: "2.321.0",
                os: "linux",
                arch: "x64",
                sha256: "a".repeat(64),
                url: "http://127.0.0.1:9/r"
              },
              credential: "github#token",
              signing_secret: "runner#signing_key",
              repositories: ["acme/app"]
            }
          }
        ]
      })
    )
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      KEEL_DATA_DIR: path.join(dir, "control"),
      KEEL_REGISTRY: registry,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = (args: Array<string>, input = "") =>
      new Promise<{ status: number | null; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [ctlBin, ...args], { env })
        let stdout = ""
        child.stdout.on("data", (c: Buffer) => {
          stdout += c
        })
        child.stdin.end(input)
        child.on("exit", (status) => resolve({ status, stdout }))
      })
    await ctl(["vault", "item", "put", "fleet-ssh"], JSON.stringify({ private_key: sshd!.clientKey }))
    await ctl(["vault", "item", "put", "github"], JSON.stringify({ token: "ghp_fake_credential" }))
    await ctl(["vault", "item", "put", "runner"], JSON.stringify({ signing_key: "s".repeat(32) }))

    const run = await ctl(["host", "precheck-runner", "install", "plain-host", "--json"])
    assert.strictEqual(run.status, 1)
    const error = (JSON.parse(run.stdout) as { error: { code: string; detail: string } }).error
    assert.strictEqual(error.code, "RUNNER_HOST_UNAVAILABLE")
    assert.match(error.detail, /not root and sudo -n is refused/, error.detail)
    assert.isFalse(fs.existsSync(runnerRoot))
    assert.strictEqual(spawnSync("id", ["-u", `keel-nx${process.pid % 100_000}`]).status, 1)
  }, 120_000)
})
