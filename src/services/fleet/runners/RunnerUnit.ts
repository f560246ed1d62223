import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Schema } from "effect"
import { FleetRegistry } from "../registry/Registry.js"
import type { Target } from "../registry/Schema.js"
import { runCommand, ServiceManager, UnitCommandFailed } from "../units/ServiceManager.js"
import type { UnitDefinition } from "../units/UnitRender.js"
import { runnerLayout } from "./RunnerLayout.js"
import { renderLaunchDaemon, renderSystemdUnit } from "./RunnerRender.js"

/** The target has no pre-check runner in this host's registry. */
export class RunnerUnitUnknown extends Schema.TaggedError<RunnerUnitUnknown>()("RunnerUnitUnknown", {
  code: Schema.Literal("RUNNER_REFUSED"),
  target: Schema.String,
  detail: Schema.String
}) {}

/** The runner's service as this host's service manager installs it: a systemd unit, or a LaunchDaemon on macOS. */
export const runnerUnitDefinition = (
  target: Target,
  runner: NonNullable<Target["precheck_runner"]>
): UnitDefinition => {
  const layout = runnerLayout(target, runner)
  return {
    name: `precheck-runner-${layout.name}`,
    unit: layout.unit,
    program: `${layout.app}/run.sh`,
    args: [],
    kind: "service",
    text: target.os === "darwin" ? renderLaunchDaemon(layout) : renderSystemdUnit(layout)
  }
}

/**
 * `ctl host precheck-runner unit ensure|remove|show <target> --here`, run on the runner's host (as root) by the
 * lifecycle: the unit through this host's own service manager — ensure (write, preflight, reload, start, read
 * back: the reconciler's procedure), remove (stop, delete, reload), show.
 */
export class RunnerUnit extends Effect.Service<RunnerUnit>()("fleet/RunnerUnit", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const manager = yield* ServiceManager

    const definition = (name: string) =>
      Effect.gen(function* () {
        const unknown = (detail: string) => new RunnerUnitUnknown({ code: "RUNNER_REFUSED", target: name, detail })
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.mapError((e) => unknown(e.detail)))
        const target = snapshot.registry.targets.find((t) => t.name === name)
        if (target?.precheck_runner === undefined) return yield* unknown(`${name} declares no precheck_runner`)
        return runnerUnitDefinition(target, target.precheck_runner)
      })

    const declared = (unit: UnitDefinition) => ({ name: unit.name, unit: unit.unit, program: unit.program })

    const ensure = (name: string) => Effect.flatMap(definition(name), manager.ensure)

    const show = (name: string) => Effect.flatMap(definition(name), (unit) => manager.inspect(declared(unit)))

    const remove = (name: string) =>
      Effect.gen(function* () {
        const unit = yield* definition(name)
        const present = yield* Effect.promise(() =>
          fs.access(unit.unit).then(
            () => true,
            () => false
          )
        )
        const before = yield* manager.inspect(declared(unit))
        if (!present && before.active_state !== "active") return { change: "absent" as const, state: before }
        yield* manager.stop(declared(unit))
        if (manager.manager === "systemd") yield* runCommand("systemctl", ["disable", path.basename(unit.unit)])
        yield* Effect.tryPromise({
          try: () => fs.rm(unit.unit, { force: true }),
          catch: (error) => new UnitCommandFailed({ unit: unit.unit, command: "remove", detail: String(error) })
        })
        if (manager.manager === "systemd") yield* runCommand("systemctl", ["daemon-reload"])
        return { change: "removed" as const, state: yield* manager.inspect(declared(unit)) }
      })

    return { ensure, show, remove } as const
  })
}) {}
