import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import {
  makeMemoryServiceManager,
  makeSupervisor,
  renderUnit,
  ServiceDeclaration,
  sha256Hex,
  type UnitDefinition
} from "../support/keel.js"

// Issue 17: the service manager's ensure / kick / start / stop / reassert, one procedure on every adapter —
// stage and preflight a changed definition before it replaces the old one, reload, (re)start, read back.

const declare = (fields: Record<string, unknown>) => Schema.decodeUnknownSync(ServiceDeclaration)(fields)

describe("ensure on the memory service manager", () => {
  const api = renderUnit(
    declare({
      name: "keel-api",
      unit: "/etc/systemd/system/keel-api.service",
      program: "/usr/local/bin/ctl",
      args: ["serve"]
    }),
    "linux"
  )

  it.effect("a missing unit is created from its definition, started and read back running", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.setProgram("/usr/local/bin/ctl", "c".repeat(64))
      const result = yield* memory.manager.ensure(api)
      assert.strictEqual(result.change, "created")
      assert.deepInclude(result.state, { load_state: "loaded", active_state: "active", unit_file_state: "enabled" })
      assert.strictEqual(result.state.process?.executable, "/usr/local/bin/ctl")
      assert.deepStrictEqual(memory.commands, [
        "install /etc/systemd/system/keel-api.service",
        "daemon-reload",
        "enable keel-api.service",
        "restart keel-api.service"
      ])
      assert.strictEqual(memory.file(api.unit), api.text)
    })
  )

  it.effect("a failed unit with a matching definition is restarted in place: no file written, no reload", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      yield* memory.manager.ensure(api)
      const before = memory.commands.length
      memory.set(api.unit, {
        ...(yield* memory.manager.inspect(api)),
        active_state: "failed",
        main_pid: 0,
        process: null
      })
      const result = yield* memory.manager.ensure(api)
      assert.strictEqual(result.change, "restarted")
      assert.deepStrictEqual(memory.commands.slice(before), ["enable keel-api.service", "restart keel-api.service"])
      assert.strictEqual(result.state.active_state, "active")
    })
  )

  it.effect("a changed definition is reloaded after its preflight; a rejected one changes nothing", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.setFile(api.unit, "[Service]\nExecStart=/usr/local/bin/ctl serve --port 1\n")
      memory.rejectPreflight(api.unit)
      const rejected = yield* Effect.flip(memory.manager.ensure(api))
      assert.strictEqual(rejected._tag, "UnitPreflightRejected")
      assert.strictEqual(memory.file(api.unit), "[Service]\nExecStart=/usr/local/bin/ctl serve --port 1\n")
      assert.deepStrictEqual(memory.commands, [], "nothing ran on the host")

      const fresh = makeMemoryServiceManager()
      fresh.setFile(api.unit, "[Service]\nExecStart=/usr/local/bin/ctl serve --port 1\n")
      const result = yield* fresh.manager.ensure(api)
      assert.strictEqual(result.change, "reloaded")
      assert.strictEqual(fresh.file(api.unit), api.text)
      assert.include(fresh.commands, "daemon-reload")
    })
  )

  it.effect("a command that fails on the host is a UnitCommandFailed naming it", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.failNext("restart keel-api.service")
      const failure = yield* Effect.flip(memory.manager.ensure(api))
      assert.strictEqual(failure._tag, "UnitCommandFailed")
      assert.include(failure._tag === "UnitCommandFailed" ? failure.command : "", "restart keel-api.service")
    })
  )

  it.effect("kick restarts a process onto the binary now on disk; reassert enables and starts a timer", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.setProgram("/usr/local/bin/ctl", "a".repeat(64))
      yield* memory.manager.ensure(api)
      memory.setProgram("/usr/local/bin/ctl", "b".repeat(64))
      const stale = yield* memory.manager.inspect(api)
      assert.notStrictEqual(stale.process?.sha256, stale.program_sha256)
      const kicked = yield* memory.manager.kick(api)
      assert.strictEqual(kicked.change, "kicked")
      assert.strictEqual(kicked.state.process?.sha256, "b".repeat(64))

      const beacon = renderUnit(
        declare({
          name: "keel-beacon",
          unit: "/etc/systemd/system/keel-beacon.service",
          program: "/usr/local/bin/ctl",
          args: ["host", "beacon", "write"],
          kind: "oneshot-timer",
          role: "beacon"
        }),
        "linux"
      )
      memory.setFile(beacon.timer!.unit, beacon.timer!.text)
      memory.set(beacon.timer!.unit, { ...(yield* memory.manager.inspect(api)), active_state: "inactive" })
      const reasserted = yield* memory.manager.reassertTimer(beacon)
      assert.strictEqual(reasserted.unit, "/etc/systemd/system/keel-beacon.timer")
      assert.strictEqual(reasserted.state.active_state, "active")
      assert.deepStrictEqual(memory.commands.slice(-2), ["enable keel-beacon.timer", "start keel-beacon.timer"])
    })
  )
})

// The same procedure on real processes: Keel's supervisor (systemd is not PID 1 in this container).
describe("ensure on the supervisor, with real processes", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-supervised-"))
  const supervisor = makeSupervisor(path.join(dir, "state"))
  const program = path.join(dir, "bin", "worker")
  fs.mkdirSync(path.dirname(program))
  fs.copyFileSync("/bin/sleep", program)
  fs.chmodSync(program, 0o755)
  const units = path.join(dir, "units")
  fs.mkdirSync(units)
  const worker: UnitDefinition = renderUnit(
    declare({ name: "worker", unit: path.join(units, "worker.service"), program, args: ["300"] }),
    "linux"
  )
  afterAll(() => Effect.runPromise(Effect.ignore(supervisor.stop(worker))))

  it.live("create, kill, restart in place, replace the binary and kick, edit the unit and reload, stop", () =>
    Effect.gen(function* () {
      const created = yield* supervisor.ensure(worker)
      assert.strictEqual(created.change, "created")
      assert.deepInclude(created.state, { load_state: "loaded", active_state: "active", manager: "supervisor" })
      assert.strictEqual(created.state.process?.executable, program)
      const firstPid = created.state.main_pid!
      assert.strictEqual(fs.readFileSync(`/proc/${firstPid}/cmdline`, "utf8").split("\0")[1], "300")

      // Killed: the unit reads failed, and ensure restarts the matching definition.
      process.kill(firstPid, "SIGKILL")
      yield* Effect.sleep("300 millis")
      assert.strictEqual((yield* supervisor.inspect(worker)).active_state, "failed")
      const restarted = yield* supervisor.ensure(worker)
      assert.strictEqual(restarted.change, "restarted")
      assert.notStrictEqual(restarted.state.main_pid, firstPid)

      // A deployment replaces the binary: the live process runs a stale copy until it is kicked.
      const next = `${program}.new`
      fs.copyFileSync("/bin/sleep", next)
      fs.appendFileSync(next, Buffer.from("keel-test-padding"))
      fs.chmodSync(next, 0o755)
      fs.renameSync(next, program)
      const stale = yield* supervisor.inspect(worker)
      assert.strictEqual(stale.process?.executable, `${program} (deleted)`)
      assert.notStrictEqual(stale.process?.sha256, stale.program_sha256)
      const kicked = yield* supervisor.kick(worker)
      assert.strictEqual(kicked.state.process?.executable, program)
      assert.strictEqual(kicked.state.process?.sha256, sha256Hex(fs.readFileSync(program)))

      // Someone edits the unit file: the manager says it needs a reload; ensure puts the declaration back.
      fs.writeFileSync(worker.unit, worker.text.replace("300", "200"))
      assert.isTrue((yield* supervisor.inspect(worker)).need_daemon_reload)
      const reloaded = yield* supervisor.ensure(worker)
      assert.strictEqual(reloaded.change, "reloaded")
      assert.strictEqual(fs.readFileSync(worker.unit, "utf8"), worker.text)
      assert.isFalse(reloaded.state.need_daemon_reload)

      // A definition its preflight rejects (the program is not there) leaves the running unit and its file.
      const broken = { ...worker, text: worker.text.replace(program, path.join(dir, "bin", "absent")) }
      const rejected = yield* Effect.flip(supervisor.ensure(broken))
      assert.strictEqual(rejected._tag, "UnitPreflightRejected")
      assert.strictEqual(fs.readFileSync(worker.unit, "utf8"), worker.text)
      assert.strictEqual((yield* supervisor.inspect(worker)).main_pid, reloaded.state.main_pid)

      const stopped = yield* supervisor.stop(worker)
      assert.strictEqual(stopped.active_state, "inactive")
      const journal = fs.readFileSync(path.join(dir, "state", "journal.log"), "utf8")
      assert.match(
        journal,
        /install .*worker\.service\n.*daemon-reload\n.*enable worker\.service\n.*restart worker\.service/
      )
    })
  )

  it.live("a oneshot's timer is reasserted: enabled, started, its service run on the timer", () =>
    Effect.gen(function* () {
      const marker = path.join(dir, "ran")
      const script = path.join(dir, "bin", "beacon.sh")
      fs.writeFileSync(script, `#!/bin/sh\necho ran >> ${marker}\n`, { mode: 0o755 })
      const beacon = renderUnit(
        declare({
          name: "beacon",
          unit: path.join(units, "beacon.service"),
          program: script,
          kind: "oneshot-timer",
          role: "beacon"
        }),
        "linux"
      )
      const ensured = yield* supervisor.ensure(beacon)
      assert.strictEqual(ensured.change, "created")
      assert.strictEqual(ensured.state.active_state, "active", "the timer waits")
      yield* supervisor.stop({ name: "beacon", unit: beacon.timer!.unit })
      const reasserted = yield* supervisor.reassertTimer(beacon)
      assert.strictEqual(reasserted.state.active_state, "active")
      yield* Effect.sleep("500 millis")
      assert.isAtLeast(fs.readFileSync(marker, "utf8").split("\n").filter(Boolean).length, 2)
      assert.strictEqual((yield* supervisor.inspect(beacon)).active_state, "inactive", "the oneshot ran and exited 0")
      yield* supervisor.stop({ name: "beacon", unit: beacon.timer!.unit })
    })
  )
})
