import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import {
  fileSha256,
  HostBeacon,
  HostOpsTest,
  liveProcess,
  MemoryServiceManager,
  makeMemoryServiceManager,
  ServiceManager,
  sha256Hex
} from "../support/keel.js"

// Issue 17, first part: the evidence the reconciler decides on — a unit's reload and file state, its
// invocation, the live executable (stale when replaced on disk) beside the declared program's hash.

describe("staleness evidence", () => {
  it.live("a process whose binary was replaced on disk reads as (deleted) with the hash of what runs", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-stale-"))
      const program = path.join(dir, "worker")
      fs.copyFileSync("/bin/sleep", program)
      fs.chmodSync(program, 0o755)
      const original = sha256Hex(fs.readFileSync(program))
      const child = spawn(program, ["30"], { stdio: "ignore" })
      try {
        yield* Effect.sleep("100 millis")
        const before = yield* liveProcess(child.pid!)
        assert.strictEqual(before.executable, program)
        assert.strictEqual(before.sha256, original)
        // A deployment replaces the file (a new inode by rename): the process still runs the old image.
        const next = path.join(dir, "worker.new")
        fs.copyFileSync("/bin/cat", next)
        fs.renameSync(next, program)
        const after = yield* liveProcess(child.pid!)
        assert.strictEqual(after.executable, `${program} (deleted)`)
        assert.strictEqual(after.sha256, original, "the hash of the running image, not of the new file")
        assert.strictEqual(yield* fileSha256(program), sha256Hex(fs.readFileSync("/bin/cat")))
        assert.isNull(yield* fileSha256(path.join(dir, "absent")))
      } finally {
        child.kill("SIGKILL")
      }
    })
  )
})

describe("a program that is a script", () => {
  it.live("runs as its interpreter: identified by the script's path in its command line, with no hash", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-script-"))
      const script = path.join(dir, "agent")
      fs.writeFileSync(script, "#!/bin/sh\nsleep 30\n", { mode: 0o755 })
      const child = spawn(script, [], { stdio: "ignore" })
      try {
        yield* Effect.sleep("100 millis")
        assert.deepStrictEqual(yield* liveProcess(child.pid!, script), {
          pid: child.pid!,
          executable: script,
          sha256: null
        })
        // Without the declaration (or for another program) the interpreter is what runs.
        const interpreter = yield* liveProcess(child.pid!)
        assert.notStrictEqual(interpreter.executable, script)
        assert.isString(interpreter.sha256)
      } finally {
        child.kill("SIGKILL")
      }
    })
  )
})

describe("the memory service manager", () => {
  it.effect("answers what was set; an unknown unit is not-found, as systemd says", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.set("/etc/systemd/system/keel-api.service", {
        load_state: "loaded",
        active_state: "active",
        sub_state: "running",
        main_pid: 4242,
        exec_start: "/usr/local/bin/keel serve",
        fragment_path: "/etc/systemd/system/keel-api.service",
        process: { pid: 4242, executable: "/usr/local/bin/keel", sha256: "a".repeat(64) },
        need_daemon_reload: false,
        unit_file_state: "enabled",
        invocation_id: "0f3c",
        program_sha256: "a".repeat(64)
      })
      const inspect = (unit: string) =>
        Effect.flatMap(ServiceManager, (m) => m.inspect({ name: "api", unit })).pipe(
          Effect.provide(MemoryServiceManager(memory))
        )
      const api = yield* inspect("/etc/systemd/system/keel-api.service")
      assert.deepInclude(api, { name: "api", active_state: "active", unit_file_state: "enabled", error: null })
      const missing = yield* inspect("/etc/systemd/system/nope.service")
      assert.deepInclude(missing, { load_state: "not-found", active_state: "inactive", main_pid: null })
    })
  )
})

describe("the host-ops test layer", () => {
  it.effect("gives the application graph the memory service manager the test controls", () =>
    Effect.gen(function* () {
      const memory = makeMemoryServiceManager()
      memory.set("keel-api.service", {
        load_state: "loaded",
        active_state: "failed",
        sub_state: "failed",
        main_pid: 0,
        exec_start: null,
        fragment_path: null,
        process: null,
        need_daemon_reload: true,
        unit_file_state: "enabled",
        invocation_id: null,
        program_sha256: null
      })
      const state = yield* Effect.flatMap(ServiceManager, (m) =>
        m.inspect({ name: "api", unit: "/etc/systemd/system/keel-api.service" })
      ).pipe(Effect.provide(HostOpsTest({}, memory)))
      assert.deepInclude(state, { active_state: "failed", need_daemon_reload: true })
    })
  )
})

describe("the beacon's unit rows", () => {
  it("a beacon written before the new fields still decodes, with them null", () => {
    const decoded = Schema.decodeUnknownSync(HostBeacon, { onExcessProperty: "error" })({
      schema: "keel.beacon/v1",
      host: "forge-1",
      os: "linux",
      reported_at: "2026-11-23T10:00:00.000Z",
      writer_version: "0.1.0",
      disks: [],
      units: [
        {
          name: "api",
          unit: "/etc/systemd/system/keel-api.service",
          manager: "systemd",
          load_state: "loaded",
          active_state: "active",
          sub_state: "running",
          main_pid: 1,
          exec_start: null,
          fragment_path: null,
          process: null,
          error: null
        }
      ]
    })
    assert.deepInclude(decoded.units[0], {
      need_daemon_reload: null,
      unit_file_state: null,
      invocation_id: null,
      program_sha256: null
    })
  })
})
