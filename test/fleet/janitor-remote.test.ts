import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CACHEDIR_SIGNATURE } from "../support/keel.js"
import { runCtlOk } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const ctl = path.join(root, "bin", "ctl.js")
let sshd: TestSshd | undefined

beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => sshd?.stop())

// Skipped only where /usr/sbin/sshd is absent; CI installs it.
describe.skipIf(!sshdAvailable)("a remote target's janitor runs there, through its host channel", () => {
  it("ctl space report and reclaim --dry-run for an ssh target relay the remote pass", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-remote-janitor-"))
    const build = path.join(dir, "remote-build", "proj", "target")
    fs.mkdirSync(build, { recursive: true })
    fs.writeFileSync(path.join(build, "CACHEDIR.TAG"), `${CACHEDIR_SIGNATURE}\n`)
    const old = new Date(Date.now() - 10 * 86_400_000)
    fs.utimesSync(build, old, old)
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        targets: [
          {
            name: "remote-1",
            os: "linux",
            channel: sshChannel(sshd!),
            disk_cleanup: {
              mode: "enforce",
              check_interval_seconds: 60,
              low_free_gb: 1_000_000,
              target_free_gb: 1_000_001,
              max_items_per_pass: 10,
              max_bytes_per_pass: 1_000_000_000,
              max_scan_items: 10_000,
              cleaners: { build_caches: { min_age_seconds: 86_400, root: path.join(dir, "remote-build") } }
            }
          }
        ]
      })
    )
    // The "remote" is this machine through sshd; its ctl gets its own data dir and host name.
    const remoteCtl = `env KEEL_DATA_DIR=${path.join(dir, "remote-data")} KEEL_REGISTRY=${registry} KEEL_HOST=remote-1 KEEL_LOG_LEVEL=warning ${process.execPath} ${ctl}`
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "operator-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "operator-laptop",
      KEEL_REMOTE_CTL: remoteCtl,
      KEEL_LOG_LEVEL: "warning"
    }
    await runCtlOk(["vault", "item", "put", "fleet-ssh"], env, JSON.stringify({ private_key: sshd!.clientKey }))
    const report = JSON.parse(await runCtlOk(["space", "report", "remote-1", "--json"], env))
    expect(report.cleanup_state.outcome).toBe("never_run")
    const preview = JSON.parse(await runCtlOk(["space", "reclaim", "remote-1", "--dry-run", "--json"], env))
    expect(preview.host).toBe("remote-1")
    expect(preview.outcome).toBe("report_only")
    expect(preview.cleaners.build_caches.candidates.map((c: { path: string }) => c.path)).toEqual([build])
    expect(fs.existsSync(build)).toBe(true)
    const applied = JSON.parse(
      await runCtlOk(["space", "reclaim", "remote-1", "--apply", "--reason", "remote test", "--json"], env)
    )
    expect(applied.reason).toBe("remote test")
    expect(fs.existsSync(build)).toBe(false)
    // A bound on a hang: each call starts ctl here and again on the remote, 10–20 s apiece on a loaded machine.
  }, 600_000)
})
