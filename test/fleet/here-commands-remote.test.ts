import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import * as Yaml from "yaml"
import { ctlBin, runCtl } from "../support/server.js"
import { sshChannel, sshdAvailable, startSshd, type TestSshd } from "../support/sshd.js"

// Issue 42 items 6 and 11: the command lines the control plane runs on a host's `ctl` (HostUnits: `service
// show|ensure|kick|reassert NAME --target T --here --json` and `service verify --here --url URL --json`), each run
// for real over an ssh channel to a real sshd on a loopback port, the host's units under Keel's supervisor. An
// endpoint probed from a remote consumer is observed (no longer `endpoint_unverified`), and `ctl host recover` on
// the remote host ensures its recovery-managed unit there and reports the one without `program` as skipped.

let sshd: TestSshd | undefined
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-here-remote-"))
const supervisorDir = path.join(dir, "remote-supervisor")
const units = path.join(dir, "units")
fs.mkdirSync(units)

beforeAll(async () => {
  if (sshdAvailable) sshd = await startSshd()
}, 120_000) // a bound on a hang: sshd's start is slow on a loaded machine
afterAll(() => {
  sshd?.stop()
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      const run = JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")) as { supervisor_pid: number }
      try {
        process.kill(run.supervisor_pid, "SIGTERM")
      } catch {}
    }
})

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port
      probe.close(() => resolve(port))
    })
  })

// The bound (2000 × 100 ms) only stops a hang: a loaded machine is 5–10× slower.
const answers = async (url: string) => {
  for (let i = 0; i < 2000; i++) {
    const ok = await fetch(url).then(
      () => true,
      () => false
    )
    if (ok) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

/** Every host-changing command the remote supervisor ran, without its timestamp. */
const journal = () =>
  fs.existsSync(path.join(supervisorDir, "journal.log"))
    ? fs
        .readFileSync(path.join(supervisorDir, "journal.log"), "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ").slice(1).join(" "))
    : []

describe.skipIf(!sshdAvailable)("the control plane's `ctl … --here` command lines, run over an ssh channel", () => {
  let ctl: (
    args: ReadonlyArray<string>,
    extra?: Record<string, string>,
    input?: string
  ) => Promise<{
    code: number | null
    json: ReturnType<typeof JSON.parse>
    stdout: string
    stderr: string
  }>
  let remoteEnv: Record<string, string>
  let url = ""

  const setUp = async () => {
    const port = await freePort()
    url = `http://127.0.0.1:${port}/health`
    const server = path.join(dir, "server.mjs")
    fs.writeFileSync(
      server,
      'import http from "node:http"\nhttp.createServer((q, s) => s.end("ok")).listen(Number(process.argv[2]), "127.0.0.1")\n'
    )
    const agent = path.join(dir, "agent")
    fs.copyFileSync("/bin/sleep", agent)
    fs.chmodSync(agent, 0o755)
    const registry = path.join(dir, "registry.yml")
    fs.writeFileSync(
      registry,
      Yaml.stringify({
        version: 1,
        settings: { autonomy_mode: "enforce-owned" },
        targets: [
          {
            name: "remote-1",
            os: "linux",
            channel: sshChannel(sshd!),
            services: [
              {
                name: "web",
                unit: path.join(units, "web.service"),
                program: process.execPath,
                args: [server, String(port)],
                // Probed from the consumer host, through its channel: never from the control plane itself.
                endpoint: { url, consumers: ["consumer-1"] }
              },
              {
                name: "cleanup",
                unit: path.join(units, "cleanup.service"),
                program: "/bin/true",
                kind: "oneshot-timer"
              },
              {
                name: "agent",
                unit: path.join(units, "agent.service"),
                program: agent,
                args: ["300"],
                kind: "recovery-managed"
              },
              { name: "bare", unit: path.join(units, "bare.service"), kind: "recovery-managed" }
            ]
          },
          { name: "consumer-1", os: "linux", channel: sshChannel(sshd!) }
        ]
      })
    )
    remoteEnv = {
      KEEL_DATA_DIR: path.join(dir, "remote-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "remote-1",
      KEEL_SERVICE_MANAGER: "supervisor",
      KEEL_SUPERVISOR_DIR: supervisorDir,
      KEEL_LOG_LEVEL: "warning"
    }
    const env = {
      ...process.env,
      KEEL_DATA_DIR: path.join(dir, "control-data"),
      KEEL_REGISTRY: registry,
      KEEL_HOST: "control",
      // The hosts' `ctl`, reached through sshd (both targets are this machine's sshd; the remote settings ride in env).
      KEEL_REMOTE_CTL: `env ${Object.entries(remoteEnv)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")} ${process.execPath} ${ctlBin}`,
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    ctl = async (args, extra = {}, input) => {
      const result = await runCtl(args, { ...env, ...extra }, input)
      let json: ReturnType<typeof JSON.parse> = null
      try {
        json = JSON.parse(result.stdout)
      } catch {}
      return { code: result.code, json, stdout: result.stdout, stderr: result.stderr }
    }
    assert.strictEqual(
      (await ctl(["vault", "item", "put", "fleet-ssh"], {}, JSON.stringify({ private_key: sshd!.clientKey }))).code,
      0
    )
  }

  it("service ensure|kick|reassert|show and an endpoint probe from a remote consumer: the unit is verified", async () => {
    await setUp()
    // `service ensure web --target remote-1 --here --json` on remote-1: the unit is created there and serves.
    const created = await ctl(["service", "ensure", "web", "--json"])
    assert.strictEqual(created.code, 0, created.stdout + created.stderr)
    assert.deepInclude(created.json, { ok: true, target: "remote-1", name: "web", change: "created" })
    assert.isTrue(await answers(url), "the web unit serves on remote-1")

    // `service verify --here --url URL --json` on consumer-1: the endpoint is observed from the consumer.
    const swept = await ctl(["service", "verify", "--json"])
    assert.strictEqual(swept.code, 0, swept.stdout + swept.stderr)
    assert.deepStrictEqual(
      swept.json.services.map((s: { name: string; endpoint: string; probes: unknown }) => [
        s.name,
        s.endpoint,
        s.probes
      ]),
      [["web", "observed", [{ from: "consumer-1", result: "observed", detail: null }]]]
    )

    // A fresh beacon that omits web (written on the host, as `ctl host beacon write` does): the sweep observes its
    // endpoint, `service show web --target remote-1 --here --json` probes the unit on the host, and it is healthy —
    // not endpoint_unverified.
    const beaconFile = path.join(dir, "beacon.json")
    const written = await ctl(["host", "beacon", "write", "--host", "remote-1", "--out", beaconFile], remoteEnv)
    assert.strictEqual(written.code, 0, written.stderr)
    const beacon = JSON.parse(fs.readFileSync(beaconFile, "utf8")) as { units: Array<{ name: string }> }
    const stored = path.join(dir, "control-data", "objects", "host_health", "remote-1.json")
    fs.mkdirSync(path.dirname(stored), { recursive: true })
    fs.writeFileSync(stored, JSON.stringify({ ...beacon, units: beacon.units.filter((u) => u.name !== "web") }))
    const converged = await ctl(["service", "converge", "remote-1", "web", "--json"])
    assert.strictEqual(converged.code, 0, converged.stdout + converged.stderr)
    const row = converged.json.services[0]
    assert.strictEqual(row.evidence.endpoint, "observed")
    assert.deepInclude(row.evidence.probe, { load_state: "loaded", active_state: "active" })
    assert.deepInclude(row.decision, { state: "healthy", action: "none" })
    assert.isNull(row.refusal)

    // `service kick web --target remote-1 --here --json`: a new process on the binary on disk.
    const before = await ctl(["service", "show", "web", "--json"])
    assert.strictEqual(before.code, 0, before.stderr)
    const kicked = await ctl(["service", "kick", "web", "--json"])
    assert.strictEqual(kicked.code, 0, kicked.stdout + kicked.stderr)
    assert.deepInclude(kicked.json, { ok: true, change: "kicked" })
    assert.notStrictEqual(kicked.json.state.main_pid, before.json.state.main_pid)

    // `service ensure cleanup …` then `service reassert cleanup --target remote-1 --here --json`: its timer.
    const timer = await ctl(["service", "ensure", "cleanup", "--json"])
    assert.deepInclude(timer.json, { ok: true, change: "created" }, timer.stderr)
    const reasserted = await ctl(["service", "reassert", "cleanup", "--json"])
    assert.strictEqual(reasserted.code, 0, reasserted.stdout + reasserted.stderr)
    assert.deepInclude(reasserted.json, { ok: true, change: "reasserted" })
    assert.strictEqual(reasserted.json.state.active_state, "active")
    assert.includeMembers(journal(), ["restart web.service", "enable cleanup.timer", "start cleanup.timer"])

    // Not a `--here` line but ctl on the host all the same: `ctl host health` runs `host beacon write --host T` there.
    const health = await ctl(["host", "health", "remote-1", "--json"])
    assert.strictEqual(health.code, 0, health.stdout + health.stderr)
    assert.strictEqual(health.json.host, "remote-1")
    assert.deepInclude(
      health.json.units.find((u: { name: string }) => u.name === "web"),
      { manager: "supervisor", active_state: "active" }
    )
  }, 1_200_000) // a bound on a hang: each ctl call starts ctl here and on the host, 10–20 s apiece when loaded

  it("host recover on the remote host ensures its recovery-managed unit there; one without program is skipped, not ok", async () => {
    assert.isDefined(ctl, "the first test set the fleet up")
    const recovered = await ctl(["host", "recover", "remote-1", "--json"])
    assert.strictEqual(recovered.code, 1, recovered.stdout + recovered.stderr)
    assert.isFalse(recovered.json.ok)
    const [step] = recovered.json.steps
    assert.deepInclude(step, { step: "recovery", ok: false })
    assert.deepStrictEqual(step.skipped, [
      { name: "bare", reason: "declaration_incomplete: the registry entry names no program" }
    ])
    assert.include(step.detail, "agent: created")
    assert.include(step.detail, "bare: skipped (declaration_incomplete")
    // `service ensure agent --target remote-1 --here --json` ran on the host's own service manager.
    assert.includeMembers(journal(), [`install ${path.join(units, "agent.service")}`, "restart agent.service"])
    assert.notInclude(journal().join("\n"), "bare.service")
  }, 600_000) // a bound on a hang: ctl starts here and on the host, 10–20 s apiece when loaded
})
