import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Schema } from "effect"
import * as Yaml from "yaml"
import {
  type CommandResult,
  DiskMeter,
  FleetRegistry,
  HandoffAgent,
  HandoffTest,
  HostAgent,
  HostAgentProtocol,
  HostAgentTest,
  HostChannel,
  Janitor,
  makeSupervisor,
  RemoteCtl,
  RunnerUnit,
  runProcess,
  type Target
} from "../support/keel.js"
import { ctlBin } from "../support/server.js"

// Issue 43 item 3: every operation of the host protocol (src/contracts/fleet/HostAgent.ts) run for real — the
// host's `ctl … --here --json` as a process, through a channel where every host is this machine — its answer
// decoded by the operation's schema and compared with what this host's in-process implementation answers. Each
// raw answer is also decoded strictly (no undeclared key) and printed again: the same text, key for key, so the
// schema is what the printing code emits.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-host-agent-"))
const dataDir = path.join(dir, "data")
const supervisorDir = path.join(dir, "supervisor")
const units = path.join(dir, "units")
fs.mkdirSync(units)
fs.mkdirSync(dataDir)
// A program of its own (the unit's executable is checked against it: /bin/sleep may be a link elsewhere).
const sleeper = path.join(dir, "sleeper")
fs.copyFileSync("/bin/sleep", sleeper)
fs.chmodSync(sleeper, 0o755)

/** What the host's `ctl` printed on stdout, per call, in order. */
const printed: Array<CommandResult> = []
const RecordingChannel = Layer.succeed(HostChannel, {
  run: (spec, request) =>
    runProcess(spec.target, request.argv, request).pipe(Effect.tap((result) => Effect.sync(() => printed.push(result))))
})

/** The last answer decoded strictly (an undeclared key is an error) and printed again: the same document. */
const exactly = <A, I>(answer: Schema.Schema<A, I>) => {
  const result = printed.at(-1)!
  const raw = JSON.parse(new TextDecoder().decode(result.stdout)) as unknown
  const decoded = Schema.decodeUnknownSync(answer, { onExcessProperty: "error" })(raw)
  assert.strictEqual(JSON.stringify(Schema.encodeSync(answer)(decoded), null, 1), JSON.stringify(raw, null, 1))
  return result.exitCode
}

let server: http.Server | undefined
let url = ""
const registryFile = path.join(dir, "registry.yml")

const remoteEnv = {
  KEEL_DATA_DIR: dataDir,
  KEEL_REGISTRY: registryFile,
  KEEL_HOST: "remote-1",
  KEEL_SERVICE_MANAGER: "supervisor",
  KEEL_SUPERVISOR_DIR: supervisorDir,
  KEEL_LOG_LEVEL: "warning"
}

const settings = Layer.setConfigProvider(
  ConfigProvider.fromMap(
    new Map([
      ...Object.entries(remoteEnv),
      [
        "KEEL_REMOTE_CTL",
        `env ${Object.entries(remoteEnv)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ")} ${process.execPath} ${ctlBin}`
      ]
    ])
  )
)

const runtime = ManagedRuntime.make(
  Layer.mergeAll(Janitor.Default.pipe(Layer.provide(DiskMeter.Live)), RunnerUnit.Default).pipe(
    Layer.provideMerge(HostAgentTest(makeSupervisor(supervisorDir), { dataDir }, RecordingChannel)),
    Layer.provide(settings)
  )
)
/** The storage-root handoff's own test graph (a runtime of its own, the same data dir), other hosts through the recording channel. */
const handoff = ManagedRuntime.make(HandoffTest({ dataDir }, undefined, RecordingChannel).pipe(Layer.provide(settings)))

beforeAll(async () => {
  server = http.createServer((_q, s) => s.end("ok"))
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/health`
  fs.writeFileSync(
    registryFile,
    Yaml.stringify({
      version: 1,
      targets: [
        {
          name: "remote-1",
          os: "linux",
          // Never dialled: the recording channel runs every host's command here.
          channel: { ssh: { host: "remote-1.invalid", user: "root", identity_item: "fleet-ssh#private_key" } },
          mounts: [dir],
          services: [
            { name: "web", unit: path.join(units, "web.service"), program: sleeper, args: ["300"] },
            { name: "cleanup", unit: path.join(units, "cleanup.service"), program: "/bin/true", kind: "oneshot-timer" }
          ]
        }
      ]
    })
  )
}, 120_000)

afterAll(async () => {
  server?.close()
  await runtime.dispose()
  await handoff.dispose()
  for (const file of fs.existsSync(supervisorDir) ? fs.readdirSync(supervisorDir) : [])
    if (file.endsWith(".run.json")) {
      const run = JSON.parse(fs.readFileSync(path.join(supervisorDir, file), "utf8")) as { supervisor_pid: number }
      try {
        process.kill(run.supervisor_pid, "SIGTERM")
      } catch {}
    }
}, 120_000)

/** The target as the registry declares it (remote: its `ctl` through the channel), and as this host (local). */
const targets = Effect.gen(function* () {
  const { registry } = yield* (yield* FleetRegistry).read()
  const remote = registry.targets.find((t) => t.name === "remote-1")!
  return { remote, local: { ...remote, channel: "local" } as Target }
})

/** A declared unit as the agent's verbs take it (a remote host renders its own definition from its registry). */
const declared = (target: Target, name: string) => {
  const service = target.services.find((s) => s.name === name)!
  return { name, unit: service.unit, program: service.program, args: service.args, kind: service.kind, text: "" }
}

const run = <A, E>(effect: Effect.Effect<A, E, HostAgent | FleetRegistry>) => runtime.runPromise(effect)

// A bound on a hang: each call starts the host's ctl, 5–20 s on a loaded machine.
const TIMEOUT = 300_000

describe("the host protocol: each operation over the real `ctl … --here --json` equals the in-process answer", () => {
  it(
    "unit ensure, then show: the remote answer is the unit this host's service manager reads",
    async () => {
      const { ensured, local, remote } = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const { local, remote } = yield* targets
          const ensured = yield* agent.for(remote).ensure(declared(remote, "web") as never)
          assert.strictEqual(exactly(HostAgentProtocol.UnitOperation.answer), 0)
          return {
            ensured,
            remote: yield* agent.for(remote).inspect(declared(remote, "web")),
            local: yield* agent.for(local).inspect(declared(remote, "web"))
          }
        })
      )
      assert.strictEqual(exactly(HostAgentProtocol.UnitOperation.answer), 0)
      assert.strictEqual(ensured.change, "created")
      assert.strictEqual(remote.active_state, "active")
      assert.deepStrictEqual(remote, local)
      assert.deepStrictEqual(ensured.state, local)
    },
    TIMEOUT
  )

  it(
    "unit kick: a new process on the host, the answer its state as read here",
    async () => {
      const { kicked, local } = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const { local, remote } = yield* targets
          const kicked = yield* agent.for(remote).kick(declared(remote, "web") as never)
          return { kicked, local: yield* agent.for(local).inspect(declared(remote, "web")) }
        })
      )
      assert.strictEqual(exactly(HostAgentProtocol.UnitOperation.answer), 0)
      assert.strictEqual(kicked.change, "kicked")
      assert.deepStrictEqual(kicked.state, local)
    },
    TIMEOUT
  )

  it(
    "unit reassert: a oneshot's timer, remote and local answering the same",
    async () => {
      const { local, remote } = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const targetsNow = yield* targets
          yield* agent.for(targetsNow.remote).ensure(declared(targetsNow.remote, "cleanup") as never)
          const remote = yield* agent.for(targetsNow.remote).reassertTimer(declared(targetsNow.remote, "cleanup"))
          const answeredBy = exactly(HostAgentProtocol.UnitOperation.answer)
          assert.strictEqual(answeredBy, 0)
          const local = yield* agent.for(targetsNow.local).reassertTimer(declared(targetsNow.remote, "cleanup"))
          return { remote, local }
        })
      )
      assert.strictEqual(remote.change, "reasserted")
      assert.strictEqual(remote.state.active_state, "active")
      assert.deepStrictEqual(remote, local)
    },
    TIMEOUT
  )

  it(
    "a unit refusal travels as its tagged error: an undeclared service means nothing ran on the host",
    async () => {
      const error = await run(
        Effect.gen(function* () {
          const { remote } = yield* targets
          return yield* Effect.flip(
            (yield* HostAgent).for(remote).ensure({ ...declared(remote, "web"), name: "nope" } as never)
          )
        })
      )
      assert.strictEqual(exactly(HostAgentProtocol.UnitOperation.answer), 1)
      assert.strictEqual(error._tag, "HostUnreachable")
      assert.include(error.detail, "nope")
    },
    TIMEOUT
  )

  it(
    "probe: an endpoint observed from the host, and one that does not answer, as here",
    async () => {
      const answers = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const { local, remote } = yield* targets
          const dead = "http://127.0.0.1:9/health"
          const remoteUp = yield* agent.for(remote).probe(url)
          assert.strictEqual(exactly(HostAgentProtocol.ProbeOperation.answer), 0)
          return {
            remote: [remoteUp, yield* agent.for(remote).probe(dead)],
            local: [yield* agent.for(local).probe(url), yield* agent.for(local).probe(dead)]
          }
        })
      )
      assert.deepStrictEqual(answers.remote, ["observed", "unreachable"])
      assert.deepStrictEqual(answers.remote, answers.local)
    },
    TIMEOUT
  )

  it(
    "beacon: collected on the host, the same document as collected here (but for its time)",
    async () => {
      const { local, remote } = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const { local, remote } = yield* targets
          const remoteBeacon = yield* agent.for(remote).beacon
          assert.strictEqual(exactly(HostAgentProtocol.BeaconOperation.answer), 0)
          return { remote: remoteBeacon, local: yield* agent.for(local).beacon }
        })
      )
      assert.strictEqual(remote.host, "remote-1")
      // The disk's free bytes move between two reads (other processes write): its mounts and units do not.
      const steady = (b: typeof remote) => ({
        ...b,
        reported_at: "",
        disks: b.disks.map((d) => ({ mount: d.mount, total_bytes: d.total_bytes, error: d.error }))
      })
      assert.deepStrictEqual(steady(remote), steady(local))
    },
    TIMEOUT
  )

  it(
    "kernel: uname on the host through its channel, as here",
    async () => {
      const kernels = await run(
        Effect.gen(function* () {
          const agent = yield* HostAgent
          const { local, remote } = yield* targets
          return [yield* agent.for(remote).kernel, yield* agent.for(local).kernel]
        })
      )
      assert.isString(kernels[0])
      assert.strictEqual(kernels[0], kernels[1])
    },
    TIMEOUT
  )

  it(
    "janitor report: the host's last pass (none, then one recorded), as this host's janitor records it",
    async () => {
      const { first, local, remote } = await runtime.runPromise(
        Effect.gen(function* () {
          const { remote } = yield* targets
          const ask = (yield* RemoteCtl).call(remote, HostAgentProtocol.JanitorReportOperation, { target: "remote-1" })
          const first = (yield* ask).answer
          assert.strictEqual(exactly(HostAgentProtocol.JanitorReportOperation.answer), 0)
          // A pass recorded on the host (no declared policy: the reporting default, which never deletes).
          yield* (yield* Janitor).pass({ writer: "watch", trigger: "manual" })
          const answer = yield* ask
          assert.strictEqual(exactly(HostAgentProtocol.JanitorReportOperation.answer), 0)
          const last = yield* (yield* Janitor).lastReport
          return {
            first,
            remote: answer.answer,
            local: { cleanup_state: { outcome: last?.outcome ?? "never_run", report: last } }
          }
        })
      )
      assert.deepStrictEqual(first, { cleanup_state: { outcome: "never_run", report: null } })
      assert.deepStrictEqual(remote, local)
      // A current pass decodes as the declared report, not as a record an older ctl kept.
      assert.isTrue(
        "cleanup_state" in remote && Schema.is(HostAgentProtocol.CleanupReport)(remote.cleanup_state.report)
      )
    },
    TIMEOUT
  )

  it(
    "janitor pass (a preview toward the target): the host's report has the shape and verdict of one run here",
    async () => {
      const { local, remote } = await runtime.runPromise(
        Effect.gen(function* () {
          const { remote } = yield* targets
          const answer = yield* (yield* RemoteCtl).call(remote, HostAgentProtocol.JanitorPassOperation, {
            target: "remote-1",
            apply: null
          })
          exactly(HostAgentProtocol.JanitorPassOperation.answer)
          const local: HostAgentProtocol.CleanupReportDocument = yield* (yield* Janitor).pass({
            writer: "watch",
            trigger: "reclaim",
            dryRun: true,
            toTarget: true
          })
          return { remote: answer.answer, local }
        })
      )
      assert.isTrue("outcome" in remote)
      const verdict = (r: HostAgentProtocol.CleanupReportDocument) => ({
        keys: Object.keys(r),
        writer: r.writer,
        trigger: r.trigger,
        host: r.host,
        mode: r.mode,
        dry_run: r.dry_run,
        policy_source: r.policy_source,
        outcome: r.outcome
      })
      assert.deepStrictEqual(verdict(remote as HostAgentProtocol.CleanupReportDocument), verdict(local))
    },
    TIMEOUT
  )

  it(
    "storage-root phases through HandoffAgent: a refusal (no storage declared) and a failure (no report), the remote host's answer as this host's",
    async () => {
      const { local, remote } = await handoff.runPromise(
        Effect.gen(function* () {
          const agents = yield* HandoffAgent
          const { remote: target } = yield* targets
          const refused = yield* agents.for(target).phase("t-1", "run")
          assert.strictEqual(exactly(HostAgentProtocol.StoragePhaseOperation.answer), 2)
          const failed = yield* Effect.flip(agents.for(target).phase("t-1", "status"))
          assert.strictEqual(exactly(HostAgentProtocol.StoragePhaseOperation.answer), 1)
          const here = agents.here("remote-1")
          const failedHere = yield* Effect.flip(here.phase("t-1", "status"))
          return {
            remote: [refused, failed.code, failed.detail],
            // The control plane names the host whose refusal it relays.
            local: [yield* here.phase("t-1", "run"), failedHere.code, `remote-1: ${failedHere.detail}`]
          }
        })
      )
      assert.deepStrictEqual(remote, local)
    },
    TIMEOUT
  )

  it(
    "runner unit verbs: a target with no runner is refused on the host with the tag this host's RunnerUnit fails with",
    async () => {
      const { local, remote } = await runtime.runPromise(
        Effect.gen(function* () {
          const { remote } = yield* targets
          const answer = yield* (yield* RemoteCtl).call(remote, HostAgentProtocol.RunnerUnitOperation, {
            verb: "show",
            target: "remote-1"
          })
          assert.strictEqual(exactly(HostAgentProtocol.RunnerUnitOperation.answer), 1)
          const error = yield* Effect.flip((yield* RunnerUnit).show("remote-1"))
          return { remote: answer.answer, local: { ok: false, error: { _tag: error._tag, detail: error.detail } } }
        })
      )
      assert.deepStrictEqual(remote as unknown, local)
    },
    TIMEOUT
  )
})
