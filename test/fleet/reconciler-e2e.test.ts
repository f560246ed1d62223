import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as Yaml from "yaml"
import {
  beaconKey,
  collectBeacon,
  FleetRegistry,
  makeSupervisor,
  ObjectGateway,
  ReconcilerOnHostsTest,
  ServiceManager,
  ServiceReconciler,
  type ServiceReport,
  type ServiceRow
} from "../support/keel.js"

// Issue 17 on real processes: Keel's supervisor runs the units (systemd is not PID 1 in this container), the
// beacon is collected from it as `ctl host beacon write` collects it, and the tick's decisions are carried out
// on real processes — started, killed, replaced by another binary, their unit files edited. Every host command
// lands in the supervisor's journal, which is the command stream asserted on.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-reconciler-e2e-"))
const bin = path.join(dir, "bin")
const units = path.join(dir, "units")
fs.mkdirSync(bin)
fs.mkdirSync(units)
const worker = path.join(bin, "worker")
fs.copyFileSync("/bin/sleep", worker)
fs.chmodSync(worker, 0o755)
const beaconScript = path.join(bin, "beacon.sh")
fs.writeFileSync(beaconScript, `#!/bin/sh\necho "$(date)" >> ${path.join(dir, "beacon.runs")}\n`, { mode: 0o755 })
const server = path.join(bin, "server.mjs")
fs.writeFileSync(
  server,
  'import http from "node:http"\nhttp.createServer((q, s) => s.end("ok")).listen(Number(process.argv[2]), "127.0.0.1")\n'
)

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port
      probe.close(() => resolve(port))
    })
  })

const registryFile = path.join(dir, "registry.yml")
const writeRegistry = (mode: string, port: number) =>
  fs.writeFileSync(
    registryFile,
    Yaml.stringify({
      version: 1,
      settings: { autonomy_mode: mode, max_actions_per_tick: 5, host_silence_seconds: 900 },
      targets: [
        {
          name: "box",
          os: "linux",
          channel: "local",
          services: [
            { name: "worker", unit: path.join(units, "worker.service"), program: worker, args: ["300"] },
            {
              name: "web",
              unit: path.join(units, "web.service"),
              program: process.execPath,
              args: [server, String(port)],
              endpoint: { url: `http://127.0.0.1:${port}/` }
            },
            {
              name: "beacon",
              unit: path.join(units, "beacon.service"),
              program: beaconScript,
              kind: "oneshot-timer",
              role: "beacon"
            }
          ]
        }
      ]
    })
  )

const supervisor = makeSupervisor(path.join(dir, "supervisor"))
const journal = () => {
  try {
    return fs
      .readFileSync(path.join(dir, "supervisor", "journal.log"), "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
  } catch {
    return []
  }
}

afterAll(async () => {
  for (const unit of ["worker.service", "web.service", "beacon.timer"])
    await Effect.runPromise(Effect.ignore(supervisor.stop({ name: unit, unit: path.join(units, unit) })))
})

const layer = ReconcilerOnHostsTest(supervisor, { overrides: { dataDir: path.join(dir, "data") } }).pipe(
  Layer.provide(
    Layer.setConfigProvider(
      ConfigProvider.fromMap(
        new Map([
          ["KEEL_REGISTRY", registryFile],
          ["KEEL_HOST", "box"]
        ])
      )
    )
  )
)

/**
 * The host's beacon, collected from the supervisor as `ctl host beacon write` does, then published (optionally
 * without some units' rows, or aged past the host-silence threshold).
 */
const publishBeacon = (options: { readonly omit?: ReadonlyArray<string>; readonly ageSeconds?: number } = {}) =>
  Effect.gen(function* () {
    const { registry } = yield* (yield* FleetRegistry).read()
    const beacon = yield* collectBeacon(registry.targets[0]!)
    const published = {
      ...beacon,
      reported_at: new Date(Date.parse(beacon.reported_at) - (options.ageSeconds ?? 0) * 1000).toISOString(),
      units: beacon.units.filter((u) => !options.omit?.includes(u.name))
    }
    yield* (yield* ObjectGateway).putJson(beaconKey("box"), published)
    return published
  })

const tickOn = (options: Parameters<typeof publishBeacon>[0] = {}) =>
  Effect.gen(function* () {
    yield* publishBeacon(options)
    return yield* (yield* ServiceReconciler).tick("manual")
  })

const tickOnFreshBeacon = tickOn()

const row = (report: ServiceReport, name: string) => report.services.find((s) => s.name === name) as ServiceRow

describe("the reconciler on real processes (Keel's supervisor)", () => {
  it.live(
    "missing → created; killed → restarted; replaced binary → kicked; edited and failed → reloaded; omitted + observed → healthy; omitted + unreachable → ensured; silent host → beacon timer reasserted; foreign binary → refused; Report mode runs nothing",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        writeRegistry("enforce-owned", port)
        const manager = yield* ServiceManager

        // Nothing installed: the services are created from their declarations and run; the beacon unit is
        // not a service ensure's to install.
        const first = yield* tickOnFreshBeacon
        assert.deepInclude(row(first, "worker").execution, { status: "succeeded", change: "created" })
        assert.deepInclude(row(first, "web").execution, { status: "succeeded", change: "created" })
        assert.deepInclude(row(first, "beacon").decision, { state: "beacon_missing", action: "none" })
        const running = yield* manager.inspect({
          name: "worker",
          unit: path.join(units, "worker.service"),
          program: worker
        })
        assert.strictEqual(running.active_state, "active")
        assert.strictEqual(running.process?.executable, worker)
        // The bound (1200 × 100 ms) only stops a hang: a node server starts slowly on a loaded machine.
        const web = yield* Effect.promise(async () => {
          for (let i = 0; i < 1200; i++) {
            const answer = await fetch(`http://127.0.0.1:${port}/`).then(
              (r) => r.text(),
              () => null
            )
            if (answer !== null) return answer
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          return null
        })
        assert.strictEqual(web, "ok", "the created web unit serves")

        // The next tick finds everything healthy and runs nothing.
        const settled = journal().length
        const second = yield* tickOnFreshBeacon
        assert.deepStrictEqual(
          second.services.map((s) => [s.name, s.decision.state]),
          [
            ["worker", "healthy"],
            ["web", "healthy"],
            ["beacon", "beacon_missing"]
          ]
        )
        assert.strictEqual(journal().length, settled)

        // Killed: failed, restarted in place (a new process).
        process.kill(running.main_pid!, "SIGKILL")
        yield* Effect.sleep("300 millis")
        const killed = yield* tickOnFreshBeacon
        assert.deepInclude(row(killed, "worker").evidence.row!, { active_state: "failed" })
        assert.deepInclude(row(killed, "worker").execution, { status: "succeeded", change: "restarted" })
        const restarted = yield* manager.inspect({
          name: "worker",
          unit: path.join(units, "worker.service"),
          program: worker
        })
        assert.notStrictEqual(restarted.main_pid, running.main_pid)

        // A deployment replaces the binary under the live process: stale, kicked onto the new one.
        const next = `${worker}.new`
        fs.copyFileSync("/bin/sleep", next)
        fs.appendFileSync(next, Buffer.from("v2"))
        fs.chmodSync(next, 0o755)
        fs.renameSync(next, worker)
        const stale = yield* tickOnFreshBeacon
        assert.deepInclude(row(stale, "worker").decision, { state: "stale_binary", action: "kick" })
        assert.strictEqual(row(stale, "worker").evidence.row?.process?.executable, `${worker} (deleted)`)
        assert.deepInclude(row(stale, "worker").execution, { status: "succeeded", change: "kicked" })
        const kicked = yield* manager.inspect({
          name: "worker",
          unit: path.join(units, "worker.service"),
          program: worker
        })
        assert.strictEqual(kicked.process?.executable, worker)
        assert.strictEqual(kicked.process?.sha256, kicked.program_sha256)

        // Someone edits the unit file and the unit fails: ensure reloads the declared definition after its
        // preflight, and the file is the declaration's again.
        const workerUnit = path.join(units, "worker.service")
        const declared = fs.readFileSync(workerUnit, "utf8")
        fs.writeFileSync(workerUnit, declared.replace(" 300", " 100"))
        process.kill(kicked.main_pid!, "SIGKILL")
        yield* Effect.sleep("300 millis")
        const edited = yield* tickOnFreshBeacon
        assert.isTrue(row(edited, "worker").evidence.row?.need_daemon_reload)
        assert.deepInclude(row(edited, "worker").execution, { status: "succeeded", change: "reloaded" })
        assert.strictEqual(fs.readFileSync(workerUnit, "utf8"), declared)

        // A fresh beacon omits web; its endpoint answers: the unit probed on the host is loaded and runs the
        // declared program at the declared path — healthy, nothing created beside it.
        const omitted = yield* tickOn({ omit: ["web"] })
        assert.strictEqual(row(omitted, "web").evidence.endpoint, "observed")
        assert.deepInclude(row(omitted, "web").evidence.probe!, { active_state: "active" })
        assert.deepInclude(row(omitted, "web").decision, { state: "healthy", action: "none" })

        // … and with web stopped its endpoint is unreachable: the ensure path starts it again.
        yield* supervisor.stop({ name: "web", unit: path.join(units, "web.service") })
        const unreachable = yield* tickOn({ omit: ["web"] })
        assert.strictEqual(row(unreachable, "web").evidence.endpoint, "unreachable")
        assert.deepInclude(row(unreachable, "web").decision, { state: "missing", action: "ensure" })
        assert.deepInclude(row(unreachable, "web").execution, { status: "succeeded", change: "restarted" })

        // The beacon unit, installed with its timer, whose timer stopped: the host falls silent. Its units are
        // unknown, and its beacon timer is reasserted because the host's service manager answers.
        const beaconUnit = path.join(units, "beacon.service")
        yield* manager.ensure({
          name: "beacon",
          unit: beaconUnit,
          program: beaconScript,
          args: [],
          kind: "oneshot-timer",
          text: `[Service]\nType=oneshot\nExecStart=${beaconScript}\n`,
          timer: {
            unit: path.join(units, "beacon.timer"),
            text: "[Timer]\nOnUnitActiveSec=3600\nUnit=beacon.service\n"
          }
        })
        yield* supervisor.stop({ name: "beacon", unit: path.join(units, "beacon.timer") })
        const silent = yield* tickOn({ ageSeconds: 1000 })
        assert.deepInclude(row(silent, "worker").decision, { state: "unknown", action: "none" })
        assert.deepInclude(row(silent, "beacon").decision, { state: "beacon_silent", action: "reassert_beacon" })
        assert.deepInclude(row(silent, "beacon").execution, { status: "succeeded", change: "reasserted" })
        assert.strictEqual(
          (yield* manager.inspect({ name: "beacon", unit: path.join(units, "beacon.timer") })).active_state,
          "active"
        )
        assert.isTrue(journal().some((line) => line.endsWith("start beacon.timer")))

        // An operator points the web unit at another binary by hand: the live process is not the declared
        // program — identity_unresolved, refused, no host command.
        const webUnit = path.join(units, "web.service")
        const sleep = fs.realpathSync("/bin/sleep")
        // What editing the unit and `systemctl daemon-reload && systemctl restart web` does on a systemd host.
        yield* manager.ensure({
          name: "web",
          unit: webUnit,
          program: sleep,
          args: ["300"],
          kind: "service",
          text: `[Service]\nExecStart=${sleep} 300\n`
        })
        const before = journal().length
        const foreign = yield* tickOnFreshBeacon
        assert.deepInclude(row(foreign, "web"), { refusal: "identity_unresolved" })
        assert.strictEqual(row(foreign, "web").evidence.row?.process?.executable, sleep)
        assert.strictEqual(journal().length, before, "a refusal runs nothing on the host")

        // Report mode: the worker killed again is planned, not restarted; the journal does not grow.
        writeRegistry("report", port)
        const current = yield* manager.inspect({ name: "worker", unit: workerUnit, program: worker })
        process.kill(current.main_pid!, "SIGKILL")
        yield* Effect.sleep("300 millis")
        const quiet = journal().length
        const report = yield* tickOnFreshBeacon
        assert.deepInclude(row(report, "worker").execution, { status: "planned" })
        assert.strictEqual(journal().length, quiet, "Report mode: zero host commands")
        assert.strictEqual(
          (yield* manager.inspect({ name: "worker", unit: workerUnit, program: worker })).active_state,
          "failed"
        )
      }).pipe(Effect.provide(layer)),
    300_000 // a bound on a hang: the units start node processes, slow on a loaded machine
  )

  // Issue 42 item 7: the supervisor answers for a unit name as systemd does — the file it loaded the unit from
  // (FragmentPath), wherever that is — so a unit the host runs from another path can be adopted.
  it.live(
    "a unit the host loaded from another path reads back loaded there: omitted + observed → relocated → adopted",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const declaredUnit = path.join(units, "relay.service")
        const hostUnit = path.join(dir, "elsewhere", "relay.service")
        fs.mkdirSync(path.dirname(hostUnit), { recursive: true })
        fs.writeFileSync(
          registryFile,
          Yaml.stringify({
            version: 1,
            settings: { autonomy_mode: "enforce-owned", max_actions_per_tick: 5, host_silence_seconds: 900 },
            targets: [
              {
                name: "box",
                os: "linux",
                channel: "local",
                services: [
                  {
                    name: "relay",
                    unit: declaredUnit,
                    program: process.execPath,
                    args: [server, String(port)],
                    endpoint: { url: `http://127.0.0.1:${port}/` }
                  }
                ]
              }
            ]
          })
        )
        const manager = yield* ServiceManager
        // An operator installed the unit by hand at another path and started it: the declared path has no file.
        yield* manager.ensure({
          name: "relay",
          unit: hostUnit,
          program: process.execPath,
          args: [server, String(port)],
          kind: "service",
          text: `[Service]\nExecStart=${process.execPath} ${server} ${port}\n`
        })
        yield* Effect.addFinalizer(() => Effect.ignore(supervisor.stop({ name: "relay", unit: hostUnit })))
        // The bound (1200 × 100 ms) only stops a hang: a node server starts slowly on a loaded machine.
        const answers = yield* Effect.promise(async () => {
          for (let i = 0; i < 1200; i++) {
            const ok = await fetch(`http://127.0.0.1:${port}/`).then(
              () => true,
              () => false
            )
            if (ok) return true
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          return false
        })
        assert.isTrue(answers, "the relay serves")
        assert.isFalse(fs.existsSync(declaredUnit))

        const probed = yield* manager.inspect({ name: "relay", unit: declaredUnit, program: process.execPath })
        assert.deepInclude(probed, { load_state: "loaded", active_state: "active", fragment_path: hostUnit })
        assert.strictEqual(probed.process?.executable, process.execPath)

        const before = journal().length
        const relocated = yield* tickOn({ omit: ["relay"] })
        assert.strictEqual(row(relocated, "relay").evidence.endpoint, "observed")
        assert.deepInclude(row(relocated, "relay").decision, { state: "relocated", action: "adopt", unit: hostUnit })
        assert.deepInclude(row(relocated, "relay").execution, { status: "succeeded", change: "adopted" })
        assert.strictEqual(Yaml.parse(fs.readFileSync(registryFile, "utf8")).targets[0].services[0].unit, hostUnit)
        assert.isFalse(fs.existsSync(declaredUnit), "no duplicate unit is created")
        assert.strictEqual(journal().length, before, "adopting runs nothing on the host")
      }).pipe(Effect.scoped, Effect.provide(layer)),
    300_000 // a bound on a hang: the units start node processes, slow on a loaded machine
  )
})
