import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { runCtlOk } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 17, the whole path on real processes: a control plane (`ctl serve`) ticks on `ctl optimize run`, reads
// the beacon a host published, and repairs the host's unit through its ssh channel — `ctl service ensure
// --here` runs there, on the host's own service manager (Keel's supervisor, since systemd is not PID 1 here).
// Then two `ctl optimize run` processes at once on one database: each service is mutated once.

const root = fileURLToPath(new URL("../..", import.meta.url))
const ctlBin = path.join(root, "bin", "ctl.js")
let sshd: TestSshd | undefined
let server: ChildProcess | undefined
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-reconciler-remote-"))
const supervisorDir = path.join(dir, "remote-supervisor")

beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => {
  server?.kill("SIGTERM")
  sshd?.stop()
  // The units the test started on the "remote" host.
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      const run = JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")) as { supervisor_pid: number }
      try {
        process.kill(run.supervisor_pid, "SIGTERM")
      } catch {}
    }
})

const journal = () =>
  fs.existsSync(path.join(supervisorDir, "journal.log"))
    ? fs.readFileSync(path.join(supervisorDir, "journal.log"), "utf8").trim().split("\n").filter(Boolean)
    : []

describe.skipIf(!sshdAvailable)("the reconciler through a control plane and an ssh channel", () => {
  it("optimize run repairs a remote host's unit through ctl service --here; concurrent runs mutate once", async () => {
    const worker = path.join(dir, "worker")
    fs.copyFileSync("/bin/sleep", worker)
    fs.chmodSync(worker, 0o755)
    const unit = path.join(dir, "units", "worker.service")
    fs.mkdirSync(path.dirname(unit))
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        settings: { autonomy_mode: "enforce-owned", autonomy_interval_seconds: 0 },
        actions: { "host-health-write": ["beacon-remote-1"], "service-ensure": ["ops"], "fleet-read": ["ops"] },
        targets: [
          {
            name: "remote-1",
            os: "linux",
            channel: sshChannel(sshd!),
            services: [{ name: "worker", unit, program: worker, args: ["300"] }]
          }
        ]
      })
    )
    const remoteEnv = {
      KEEL_DATA_DIR: path.join(dir, "remote-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "remote-1",
      KEEL_SERVICE_MANAGER: "supervisor",
      KEEL_SUPERVISOR_DIR: supervisorDir,
      KEEL_LOG_LEVEL: "warning"
    }
    const remoteCtl = `env ${Object.entries(remoteEnv)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")} ${process.execPath} ${ctlBin}`
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "control-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "control",
      KEEL_REMOTE_CTL: remoteCtl,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const ctl = (args: Array<string>, extra: Record<string, string> = {}, input?: string) =>
      runCtlOk(args, { ...env, ...extra }, input)
    await ctl(["vault", "item", "put", "fleet-ssh"], {}, JSON.stringify({ private_key: sshd!.clientKey }))

    server = spawn(process.execPath, [ctlBin, "serve", "--port", "0"], {
      env: { ...env, KEEL_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    const port = await new Promise<number>((resolve, reject) => {
      let output = ""
      // Only a guard against a server that hangs: a loaded machine has taken over 20 s to start one.
      const timer = setTimeout(() => reject(new Error(output)), 120_000)
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        const match = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
        if (match) {
          clearTimeout(timer)
          resolve(Number(match[1]))
        }
      }
      server!.stdout!.on("data", onData)
      server!.stderr!.on("data", onData)
    })
    const url = `http://127.0.0.1:${port}`
    const grant = (consumer: string, action: string, file: string, host?: string) =>
      ctl([
        "vault",
        "grant",
        "create",
        "--consumer",
        consumer,
        "--action",
        action,
        ...(host === undefined ? [] : ["--host", host]),
        "--out",
        path.join(dir, file)
      ])
    await grant("beacon-remote-1", "host-health-write", "beacon.grant", "remote-1")
    await grant("ops", "service-ensure", "ops.grant")
    const routing = path.join(dir, "routing.env")
    fs.writeFileSync(
      routing,
      `KEEL_CONTROL_PLANE_URL=${url}\nKEEL_VAULT_URL=${url}\nKEEL_BEACON_CONSUMER=beacon-remote-1\nKEEL_BEACON_GRANT_FILE=${path.join(dir, "beacon.grant")}\n`
    )
    /** The host writes its beacon from its own service manager and publishes it to the control plane. */
    const publishBeacon = async () => {
      const file = path.join(dir, "beacon.json")
      await ctl(["host", "beacon", "write", "--host", "remote-1", "--out", file], remoteEnv)
      await ctl(["host", "publish-beacon", file, "--routing-file", routing])
    }
    const optimize = { KEEL_CONTROL_PLANE_URL: url, KEEL_GRANT_FILE: path.join(dir, "ops.grant") }

    // Nothing installed on the host: the control plane's tick creates the unit there, through ssh.
    await publishBeacon()
    const first = JSON.parse(await ctl(["optimize", "run", "--json"], optimize))
    const row = first.services.find((s: { name: string }) => s.name === "worker")
    assert.deepInclude(row.decision, { state: "missing", action: "ensure" })
    assert.deepInclude(row.execution, { status: "succeeded", change: "created" })
    assert.deepStrictEqual(
      journal().map((line) => line.split(" ").slice(1).join(" ")),
      [`install ${unit}`, "daemon-reload", "enable worker.service", "restart worker.service"]
    )
    const shown = JSON.parse(await ctl(["service", "show", "worker", "--json"]))
    assert.strictEqual(shown.state.active_state, "active")
    assert.strictEqual(shown.state.manager, "supervisor")
    assert.strictEqual(shown.state.process.executable, worker)
    assert.strictEqual(shown.last_run.execution.change, "created")

    // The worker is killed; the host's beacon says failed. Two operators run a tick at the same moment,
    // in this process tree, on the control plane's database: one restarts it, the other does not touch it
    // (it waits for the tick lease, or finds the host already repaired).
    process.kill(shown.state.main_pid, "SIGKILL")
    await new Promise((resolve) => setTimeout(resolve, 300))
    await publishBeacon()
    const before = journal().length
    const runAt = () =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        execFile(process.execPath, [ctlBin, "optimize", "run", "--json"], { env, encoding: "utf8" }, (error, stdout) =>
          resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout })
        )
      })
    const both = await Promise.all([runAt(), runAt()])
    const restarts = journal()
      .slice(before)
      .filter((line) => line.endsWith("restart worker.service"))
    assert.lengthOf(restarts, 1, JSON.stringify(both))
    const outcomes = both.map((b) => JSON.parse(b.stdout))
    const statuses = outcomes.map((o) =>
      "error" in o ? o.error.code : o.services.find((s: { name: string }) => s.name === "worker").execution.status
    )
    assert.include(statuses, "succeeded")
    for (const status of statuses) assert.oneOf(status, ["succeeded", "TICK_IN_PROGRESS", "skipped"])

    // GET /api/fleet/services answers what `ctl service list --json` prints.
    const listed = JSON.parse(await ctl(["service", "list", "--json"]))
    assert.strictEqual(listed.services[0].name, "worker")
  }, 900_000) // a bound on a hang: each ctl call takes 10–20 s here and again on the remote on a loaded machine
})
