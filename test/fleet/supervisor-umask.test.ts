import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterAll } from "vitest"
import { makeSupervisor, renderUnit } from "../support/keel.js"

// Issue 42 follow-up: `ctl serve` runs with umask 077 (docs/security.md). A unit its reconciler starts must not
// inherit it: as systemd, Keel's supervisor starts a unit's program with umask 0022 unless the unit says UMask=.

const built = fs.existsSync(
  fileURLToPath(new URL("../../dist/src/services/fleet/agent/units/SupervisorMain.js", import.meta.url))
)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-supervisor-umask-"))
const supervisor = makeSupervisor(path.join(dir, "supervisor"))
const units = ["default-umask.service", "declared-umask.service"]

afterAll(async () => {
  for (const unit of units)
    await Effect.runPromise(Effect.ignore(supervisor.stop({ name: unit, unit: path.join(dir, unit) })))
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A program that creates `made` (mode 0666 less its umask) and then stays up. */
const programWriting = (made: string) => {
  const program = path.join(dir, `writes-${path.basename(made)}`)
  fs.writeFileSync(program, `#!/bin/sh\n: > ${made}.tmp && mv ${made}.tmp ${made}\nwhile :; do sleep 1; done\n`, {
    mode: 0o755
  })
  fs.chmodSync(program, 0o755)
  return program
}

/** Starts `name` under a parent whose umask is 077 (as `ctl serve`'s), and waits for the file it creates. */
const startUnder077 = (name: string, extra: string) =>
  Effect.gen(function* () {
    const made = path.join(dir, `${name}.out`)
    const program = programWriting(made)
    const umask = process.umask(0o077)
    const ensured = yield* supervisor
      .ensure({
        name,
        unit: path.join(dir, `${name}.service`),
        program,
        args: [],
        kind: "service",
        text: `[Service]\nType=simple\n${extra}ExecStart=${program}\n`
      })
      .pipe(Effect.ensuring(Effect.sync(() => process.umask(umask))))
    assert.strictEqual(ensured.state.active_state, "active")
    for (let i = 0; i < 300 && !fs.existsSync(made); i++) yield* Effect.sleep("100 millis")
    return fs.statSync(made).mode & 0o777
  })

describe.skipIf(!built)(
  "Keel's supervisor starts a unit with systemd's umask, not its parent's (npm run build)",
  () => {
    it.live(
      "a unit started under a parent with umask 077 creates a file 0644",
      () =>
        Effect.gen(function* () {
          assert.strictEqual(yield* startUnder077("default-umask", ""), 0o644)
        }),
      60_000
    )

    it.live(
      "a unit's UMask= is honoured",
      () =>
        Effect.gen(function* () {
          assert.strictEqual(yield* startUnder077("declared-umask", "UMask=0027\n"), 0o640)
        }),
      60_000
    )
  }
)

describe("a registry declaration's umask is rendered into its unit", () => {
  it("as UMask= (systemd) and Umask (launchd); nothing when undeclared", () => {
    const declaration = {
      name: "api",
      unit: "/etc/systemd/system/api.service",
      program: "/usr/bin/api",
      args: [],
      kind: "service" as const,
      umask: "0027"
    }
    assert.include(renderUnit(declaration, "linux").text, "\nUMask=0027\n")
    assert.include(renderUnit(declaration, "darwin").text, "<key>Umask</key>\n  <integer>23</integer>")
    const { umask: _, ...undeclared } = declaration
    assert.notInclude(renderUnit(undeclared, "linux").text, "UMask")
    assert.notInclude(renderUnit(undeclared, "darwin").text, "Umask")
  })
})
