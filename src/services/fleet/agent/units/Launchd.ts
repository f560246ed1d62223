import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { UnitCommandFailed, UnitPreflightRejected } from "../../../../contracts/fleet/HostAgent.js"
import {
  type DeclaredUnit,
  emptyUnitState,
  fileSha256,
  isScript,
  runCommand,
  ServiceManager,
  stagedInstall,
  type UnitHost,
  unitName,
  unitOperations
} from "../../shared/units/ServiceManager.js"

const label = (unit: string) => unitName(unit).replace(/\.plist$/, "")
const firstLine = (text: string, fallback: string) => text.trim().split("\n")[0] || fallback

/**
 * launchd (macOS system domain): `launchctl print` for the state, `plutil -lint` as the preflight,
 * `bootout` + `bootstrap` to load a changed plist, `kickstart` to (re)start.
 *
 * The live process's executable is what `ps -o comm=` reports for its pid (macOS prints the full path), so a
 * process running another program than the declared one is told apart; its hash is null — macOS gives no
 * handle on the running image, so a binary replaced under a live process is not detectable here
 * (docs/reconciler.md).
 */
/**
 * The full path of a process's executable (`ps -o comm=`), or null when it cannot be read. A declared program
 * that is a `#!` script runs as its interpreter: it is the executable when the process's arguments run it.
 */
const executableOf = (pid: number, program: string | undefined) =>
  Effect.gen(function* () {
    const comm = yield* runCommand("ps", ["-o", "comm=", "-p", String(pid)])
    const path = comm.stdout.trim()
    if (comm.code !== 0 || !path.startsWith("/")) return null
    if (program === undefined || path === program || !(yield* Effect.promise(() => isScript(program)))) return path
    const args = yield* runCommand("ps", ["-o", "args=", "-p", String(pid)])
    return args.stdout.trim().split(/\s+/).slice(1, 3).includes(program) ? program : path
  })

export const makeLaunchd = (): ServiceManager["Type"] => {
  const inspect = (declared: DeclaredUnit) =>
    Effect.gen(function* () {
      const result = yield* runCommand("launchctl", ["print", `system/${label(declared.unit)}`])
      if (result.code !== 0) {
        const exists = yield* Effect.promise(() =>
          fs.access(declared.unit).then(
            () => true,
            () => false
          )
        )
        // Not loaded: absent when its plist is absent too (systemd's not-found), otherwise merely not loaded.
        return {
          ...emptyUnitState(declared, "launchd", exists ? firstLine(result.stderr, "launchctl failed") : null),
          ...(exists ? {} : { load_state: "not-found", active_state: "inactive" })
        }
      }
      const field = (name: string) => new RegExp(`^\\s*${name} = (.*)$`, "m").exec(result.stdout)?.[1]?.trim() ?? null
      const pid = Number(field("pid") ?? "0")
      return {
        ...emptyUnitState(declared, "launchd", null),
        load_state: "loaded",
        active_state: field("state") === "running" ? "active" : field("state"),
        sub_state: field("state"),
        main_pid: pid > 0 ? pid : null,
        exec_start: field("program"),
        fragment_path: field("path"),
        process: pid > 0 ? { pid, executable: yield* executableOf(pid, declared.program), sha256: null } : null,
        program_sha256: declared.program === undefined ? null : yield* fileSha256(declared.program)
      }
    })

  const preflight = (staged: string) =>
    Effect.gen(function* () {
      const result = yield* runCommand("plutil", ["-lint", staged])
      if (result.code !== 0)
        return yield* new UnitPreflightRejected({
          unit: staged,
          detail: `plutil -lint: ${firstLine(result.stdout || result.stderr, `exit ${result.code}`)}`
        })
    })

  const launchctl = (unit: string, args: ReadonlyArray<string>) =>
    Effect.flatMap(runCommand("launchctl", args), (result) =>
      result.code === 0
        ? Effect.void
        : new UnitCommandFailed({
            unit,
            command: `launchctl ${args.join(" ")}`,
            detail: firstLine(result.stderr, `exit ${result.code}`)
          })
    )

  const host: UnitHost = {
    manager: "launchd",
    inspect,
    readFile: (file) => Effect.promise(() => fs.readFile(file, "utf8").catch(() => null)),
    preflight,
    install: stagedInstall(preflight),
    // A changed plist is loaded by booting the job out (absent is fine) and bootstrapping it again.
    reload: (units) =>
      Effect.forEach(
        units,
        (unit) =>
          Effect.zipRight(
            runCommand("launchctl", ["bootout", `system/${label(unit)}`]),
            launchctl(unit, ["bootstrap", "system", path.resolve(unit)])
          ),
        { discard: true }
      ),
    control: (verb, unit) => {
      const target = `system/${label(unit)}`
      switch (verb) {
        case "enable":
          return launchctl(unit, ["enable", target])
        case "start":
          return launchctl(unit, ["kickstart", target])
        case "restart":
          return launchctl(unit, ["kickstart", "-k", target])
        case "stop":
          return launchctl(unit, ["kill", "SIGTERM", target])
      }
    },
    settle: "10 seconds"
  }
  return unitOperations(host)
}

export const Launchd = Layer.sync(ServiceManager, makeLaunchd)
