import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Schema } from "effect"
import { UnitCommandFailed } from "../../../../contracts/fleet/HostAgent.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"
import { runnerLayout } from "../../shared/runners/RunnerLayout.js"
import {
  renderGatewayEnv,
  renderGatewayUnit,
  renderLaunchDaemon,
  renderSystemdUnit
} from "../../shared/runners/RunnerRender.js"
import { unitEnvironment } from "../../shared/UnitSettings.js"
import { runCommand, ServiceManager } from "../../shared/units/ServiceManager.js"
import type { UnitDefinition } from "../../shared/units/UnitRender.js"

/** The target has no pre-check runner in this host's registry. */
export class RunnerUnitUnknown extends Schema.TaggedError<RunnerUnitUnknown>()("RunnerUnitUnknown", {
  code: Schema.Literal("RUNNER_REFUSED"),
  target: Schema.String,
  detail: Schema.String
}) {}

type Declaration = NonNullable<Target["precheck_runner"]>

/** The runner's service as this host's service manager installs it: a systemd unit, or a LaunchDaemon on macOS. */
export const runnerUnitDefinition = (target: Target, runner: Declaration): UnitDefinition => {
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

/** The gateway's service (`ctl host gateway`), when the runner declares a control plane. */
export const gatewayUnitDefinition = (target: Target, runner: Declaration): UnitDefinition | null => {
  const layout = runnerLayout(target, runner)
  if (layout.gateway === null) return null
  return {
    name: `precheck-gateway-${layout.name}`,
    unit: layout.gateway.unit,
    program: layout.gateway.ctl,
    args: ["host", "gateway", "--target", target.name],
    kind: "service",
    text: renderGatewayUnit(layout, target.name)
  }
}

/**
 * `ctl host precheck-runner unit ensure|remove|show <target> --here`, run on the runner's host (as root) by the
 * lifecycle: the runner's unit, and the gateway's when declared, through this host's own service manager — ensure
 * (write, preflight, reload, start, read back: the reconciler's procedure), remove (stop, delete, reload), show.
 */
export class RunnerUnit extends Effect.Service<RunnerUnit>()("fleet/RunnerUnit", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const manager = yield* ServiceManager
    /** What a unit running this host's ctl needs: its registry, data dir and host name. */
    const hostEnvironment = yield* unitEnvironment

    /** The runner's unit, then the gateway's when declared. */
    const definitions = (name: string) =>
      Effect.gen(function* () {
        const unknown = (detail: string) => new RunnerUnitUnknown({ code: "RUNNER_REFUSED", target: name, detail })
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.mapError((e) => unknown(e.detail)))
        const target = snapshot.registry.targets.find((t) => t.name === name)
        if (target?.precheck_runner === undefined) return yield* unknown(`${name} declares no precheck_runner`)
        const gateway = gatewayUnitDefinition(target, target.precheck_runner)
        return [runnerUnitDefinition(target, target.precheck_runner), ...(gateway === null ? [] : [gateway])]
      })

    const declared = (unit: UnitDefinition) => ({ name: unit.name, unit: unit.unit, program: unit.program })

    /** The gateway's routing, root-owned beside its grant: this host's own registry and data dir, and the plane. */
    const writeGatewayEnv = (name: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.orDie)
        const target = snapshot.registry.targets.find((t) => t.name === name)
        if (target?.precheck_runner === undefined) return
        const layout = runnerLayout(target, target.precheck_runner)
        if (layout.gateway === null) return
        const text = renderGatewayEnv(layout, name, hostEnvironment)
        const file = layout.gateway.envFile
        yield* Effect.tryPromise({
          try: async () => {
            await fs.writeFile(`${file}.keel-tmp`, text, { mode: 0o644 })
            // 0644 as the runner layout states it, whatever the process umask (the server's is 077).
            await fs.chmod(`${file}.keel-tmp`, 0o644)
            await fs.rename(`${file}.keel-tmp`, file)
          },
          catch: (error) => new UnitCommandFailed({ unit: file, command: "write", detail: String(error) })
        })
      })

    const ensure = (name: string) =>
      Effect.gen(function* () {
        const units = yield* definitions(name)
        yield* writeGatewayEnv(name)
        return yield* Effect.forEach(units, (unit) =>
          Effect.map(manager.ensure(unit), (result) => ({
            name: unit.name,
            change: result.change,
            state: result.state
          }))
        )
      })

    const show = (name: string) =>
      Effect.flatMap(definitions(name), (units) =>
        Effect.forEach(units, (unit) =>
          Effect.map(manager.inspect(declared(unit)), (state) => ({ name: unit.name, change: "shown", state }))
        )
      )

    const removeOne = (unit: UnitDefinition) =>
      Effect.gen(function* () {
        const present = yield* Effect.promise(() =>
          fs.access(unit.unit).then(
            () => true,
            () => false
          )
        )
        const before = yield* manager.inspect(declared(unit))
        if (!present && before.active_state !== "active") return { name: unit.name, change: "absent", state: before }
        yield* manager.stop(declared(unit))
        if (manager.manager === "systemd") yield* runCommand("systemctl", ["disable", path.basename(unit.unit)])
        yield* Effect.tryPromise({
          try: () => fs.rm(unit.unit, { force: true }),
          catch: (error) => new UnitCommandFailed({ unit: unit.unit, command: "remove", detail: String(error) })
        })
        if (manager.manager === "systemd") yield* runCommand("systemctl", ["daemon-reload"])
        return { name: unit.name, change: "removed", state: yield* manager.inspect(declared(unit)) }
      })

    /** The gateway first (it serves the runner's jobs), then the runner. */
    const remove = (name: string) =>
      Effect.flatMap(definitions(name), (units) => Effect.forEach([...units].reverse(), removeOne))

    return { ensure, show, remove } as const
  })
}) {}
