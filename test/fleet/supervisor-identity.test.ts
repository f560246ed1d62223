import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { makeSupervisor } from "../support/keel.js"

// Issue 20 runs the pre-check runner's unit under Keel's supervisor where systemd is not PID 1: the supervisor honours
// the unit's User=, Group=, WorkingDirectory=, Environment= and its drop-ins, as systemd does.

const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0
const built = fs.existsSync(
  fileURLToPath(new URL("../../dist/src/services/fleet/agent/units/SupervisorMain.js", import.meta.url))
)
const ready = process.getuid?.() === 0 && has("useradd") && built
const account = `keel-sv${process.pid % 100_000}`
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-supervisor-identity-"))
fs.chmodSync(dir, 0o755)
const supervisor = makeSupervisor(path.join(dir, "supervisor"))

afterAll(async () => {
  for (const unit of ["as-account.service", "no-such-user.service"])
    await Effect.runPromise(Effect.ignore(supervisor.stop({ name: unit, unit: path.join(dir, unit) })))
  if (ready) {
    // The unit's last `sleep` may outlive its stopped shell for a moment: an account in use is not deleted.
    spawnSync("pkill", ["-KILL", "-u", account])
    spawnSync("userdel", [account])
  }
  fs.rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!ready)("Keel's supervisor runs a unit as its User= (needs root, useradd; npm run build)", () => {
  it.live("with its group, working directory, environment and drop-ins", () =>
    Effect.gen(function* () {
      execFileSync("useradd", ["--system", "--user-group", "--home-dir", "/nonexistent", "--no-create-home", account])
      const uid = Number(execFileSync("id", ["-u", account], { encoding: "utf8" }).trim())
      const work = path.join(dir, "work")
      fs.mkdirSync(work, { mode: 0o777 })
      fs.chmodSync(work, 0o777)
      const program = path.join(dir, "agent")
      fs.writeFileSync(
        program,
        `#!/bin/sh\nprintf '%s %s %s %s %s %s %s\\n' "$(id -u)" "$(pwd)" "$HOME" "$USER" "$GREETING" "$LATER" "$FROM_FILE" > ${work}/who\nwhile :; do sleep 1; done\n`,
        { mode: 0o755 }
      )
      const unit = path.join(dir, "as-account.service")
      fs.mkdirSync(`${unit}.d`)
      fs.writeFileSync(`${unit}.d/10-later.conf`, '[Service]\nEnvironment="LATER=from the drop-in"\n')
      const environmentFile = path.join(dir, "unit.env")
      fs.writeFileSync(environmentFile, '# routing\nFROM_FILE="the file"\nGREETING=overridden by the file\n')
      const ensured = yield* supervisor.ensure({
        name: "as-account",
        unit,
        program,
        args: [],
        kind: "service",
        text: `[Service]\nType=simple\nUser=${account}\nWorkingDirectory=${work}\nEnvironment=GREETING=hello\nEnvironmentFile=${environmentFile}\nEnvironmentFile=-/nonexistent/optional.env\nExecStart=${program}\n`
      })
      assert.strictEqual(ensured.state.active_state, "active")
      for (let i = 0; i < 50 && !fs.existsSync(path.join(work, "who")); i++) yield* Effect.sleep("100 millis")
      assert.strictEqual(
        fs.readFileSync(path.join(work, "who"), "utf8"),
        `${uid} ${work} /nonexistent ${account} overridden by the file from the drop-in the file\n`
      )
    })
  )

  it.live("an unknown User= fails the start, as systemd's exit 217 does", () =>
    Effect.gen(function* () {
      const unit = path.join(dir, "no-such-user.service")
      const outcome = yield* Effect.either(
        supervisor.ensure({
          name: "no-such-user",
          unit,
          program: "/bin/sleep",
          args: ["30"],
          kind: "service",
          text: "[Service]\nType=simple\nUser=keel-no-such-account\nExecStart=/bin/sleep 30\n"
        })
      )
      assert.strictEqual(outcome._tag, "Left")
    })
  )
})
