import { type ChildProcess, execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { measureCapacity } from "../support/keel.js"
import { ctlBin, runCtlOk, startServer } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 15: a second host (reached over the ssh test host) publishes its capacity and its janitor report
// through the control plane's object API; GET /api/fleet/hosts shows them and gates reads the capacity.

let sshd: TestSshd | undefined
const children: Array<ChildProcess> = []
beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
  sshd?.stop()
})

describe("the capacity a host measures", () => {
  it("is ready with room, disk_low below its policy's low_free_gb", async () => {
    const now = new Date("2026-11-23T12:00:00Z")
    const ready = await Effect.runPromise(measureCapacity("h", "/", undefined, now))
    expect(ready.host).toBe("h")
    expect(ready.published_at).toBe("2026-11-23T12:00:00.000Z")
    expect(["ready", "saturated"]).toContain(ready.state)
    expect(ready.reason).toMatch(/GiB free on \/|load/)
    const low = await Effect.runPromise(measureCapacity("h", "/", 1_000_000_000, now))
    expect(low).toMatchObject({ admitting: false, state: "disk_low" })
    expect(low.reason).toMatch(/below low_free_gb 1000000000/)
  })
})

// Skipped only where /usr/sbin/sshd is absent; CI installs it.
describe.skipIf(!sshdAvailable)("a second host publishes through the object API", () => {
  it("ctl host publish-state on the ssh host → /api/fleet/hosts and gates show it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-host-state-"))
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        actions: { "host-state-write": ["state-remote-1"], "fleet-read": ["ops"] },
        targets: [
          { name: "cp-1", os: "linux", channel: "local" },
          {
            name: "remote-1",
            os: "linux",
            channel: sshChannel(sshd!),
            disk_cleanup: {
              mode: "report",
              check_interval_seconds: 60,
              low_free_gb: 1_000_000,
              target_free_gb: 1_000_001,
              max_items_per_pass: 10,
              max_bytes_per_pass: 1_000_000,
              max_scan_items: 1_000
            }
          }
        ]
      })
    )
    // The control plane: `ctl serve` with its own data dir and vault key.
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "cp-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "cp-1",
      KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = (args: Array<string>, input?: string) => runCtlOk(args, env, input)
    await ctl(["vault", "item", "put", "fleet-ssh"], JSON.stringify({ private_key: sshd!.clientKey }))
    const stateGrant = path.join(dir, "state-grant.json")
    await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "state-remote-1",
      "--action",
      "host-state-write",
      "--host",
      "remote-1",
      "--out",
      stateGrant
    ])
    const opsGrant = path.join(dir, "ops-grant.json")
    await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "ops",
      "--action",
      "fleet-read",
      "--host",
      "remote-1",
      "--out",
      opsGrant
    ])
    const server = await startServer([ctlBin, "serve", "--port", "0"], { ...env, KEEL_LOG_LEVEL: "info" }, children)
    const url = `http://127.0.0.1:${server.port}`

    // The "remote" is this machine through sshd, with its own data dir and host name: its ctl runs there.
    const key = path.join(dir, "client_key")
    fs.writeFileSync(key, sshd!.clientKey, { mode: 0o600 })
    const remote = [
      "env",
      `KEEL_DATA_DIR=${path.join(dir, "remote-data")}`,
      `KEEL_REGISTRY=${registry}`,
      "KEEL_HOST=remote-1",
      `KEEL_CONTROL_PLANE_URL=${url}`,
      `KEEL_STATE_GRANT_FILE=${stateGrant}`,
      "KEEL_LOG_LEVEL=warning",
      process.execPath,
      ctlBin
    ].join(" ")
    // Awaited, never execFileSync: the remote ctl runs a janitor pass, too long to block the worker's event loop.
    const ssh = async (command: string) =>
      (
        await promisify(execFile)(
          "ssh",
          [
            "-i",
            key,
            "-p",
            String(sshd!.port),
            "-o",
            `UserKnownHostsFile=${sshd!.knownHosts}`,
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            `${sshd!.user}@127.0.0.1`,
            command
          ],
          { encoding: "utf8" }
        )
      ).stdout
    await ssh(`${remote} disk-cleanup --once --json > /dev/null`)
    const published = JSON.parse(await ssh(`${remote} host publish-state --json`))
    expect(published.host).toBe("remote-1")
    expect(published.capacity.key).toBe("state/capacity/remote-1.json")
    // Its policy says 1,000,000 GiB must be free: the host says it does not admit work, and why.
    expect(published.capacity.document).toMatchObject({ admitting: false, state: "disk_low" })
    expect(published.janitor.key).toBe("state/janitor/remote-1.json")

    // An operator reads the fleet over HTTP.
    const credential = JSON.parse(fs.readFileSync(opsGrant, "utf8"))
    const exchanged = await fetch(`${url}/v1/vault/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_id: credential.grant_id, consumer: credential.consumer, secret: credential.secret })
    })
    const { token } = (await exchanged.json()) as { token: string }
    const hosts = (await (
      await fetch(`${url}/api/fleet/hosts`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      hosts: Array<{
        name: string
        capacity: { state: string; document?: unknown }
        janitor: { state: string; document?: { cleanup_state: { outcome: string } } }
      }>
    }
    const remote1 = hosts.hosts.find((h) => h.name === "remote-1")!
    expect(remote1.capacity).toEqual({ state: "present", document: published.capacity.document })
    expect(remote1.janitor.state).toBe("present")
    expect(remote1.janitor.document?.cleanup_state.outcome).not.toBe("never_run")
    const gates = (await (
      await fetch(`${url}/api/fleet/gates/remote-1`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { pressure_source: string; capacity: { diagnostics: { state: string; admitting: boolean } } }
    expect(gates.pressure_source).toBe("capacity_publication")
    expect(gates.capacity.diagnostics).toMatchObject({ state: "disk_low", admitting: false })
    server.child.kill("SIGTERM")
    // A bound on a hang: each ctl call (and the remote ones through ssh) takes 10–20 s on a loaded machine.
  }, 600_000)
})
