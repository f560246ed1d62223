import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import {
  type DeclaredUnit,
  emptyUnitState,
  fileSha256,
  runCommand,
  ServiceManager,
  stagedInstall,
  UnitCommandFailed,
  type UnitHost,
  UnitPreflightRejected,
  unitName,
  unitOperations
} from "./ServiceManager.js"

const label = (unit: string) => unitName(unit).replace(/\.plist$/, "")
const firstLine = (text: string, fallback: string) => text.trim().split("\n")[0] || fallback

/**
 * launchd (macOS system domain): `launchctl print` for the state, `plutil -lint` as the preflight,
 * `bootout` + `bootstrap` to load a changed plist, `kickstart` to (re)start.
 *
 * launchd does not give the running image: the declared program's path stands in for the process's executable
 * and its hash is null, so a replaced binary is not detectable here and a process running another program
 * than the plist's cannot be told apart (docs/reconciler.md).
 */
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
        process: pid > 0 ? { pid, executable: field("program"), sha256: null } : null,
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
