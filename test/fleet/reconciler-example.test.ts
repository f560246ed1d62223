import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Clock, ConfigProvider, Effect, Layer } from "effect"
import {
  beaconKey,
  FleetRegistry,
  makeMemoryHostUnits,
  ObjectGateway,
  ReconcilerTest,
  renderSystemd,
  renderUnit,
  ServiceReconciler
} from "../support/keel.js"

// Issue 17: the example fleet (examples/registry.yml), every host installed as Keel installs it — services
// from their declarations, the beacon as `ctl host beacon install` renders it (a oneshot between runs and its
// active timer), the recovery unit by the recovery program — is reported with no repair on its first tick.

const root = fileURLToPath(new URL("../..", import.meta.url))
const example = path.join(root, "examples", "registry.yml")

describe("the example fleet's first tick", () => {
  it.effect(
    "Report mode on correctly installed hosts: every unit healthy (or recovery-managed), nothing planned",
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-example-fleet-"))
      const hosts = makeMemoryHostUnits()
      const layer = ReconcilerTest({ hosts, overrides: { dataDir: dir } }).pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", example]]))))
      )
      return Effect.gen(function* () {
        const { registry } = yield* (yield* FleetRegistry).read()
        assert.strictEqual(registry.settings.autonomy_mode, "report")
        const objects = yield* ObjectGateway
        const now = yield* Clock.currentTimeMillis
        for (const target of registry.targets) {
          const host = hosts.host(target.name)
          for (const service of target.services) {
            if (service.program !== undefined) host.setProgram(service.program, "c".repeat(64))
            if (service.role === "beacon") {
              const rendered = renderSystemd({
                ctl: [service.program ?? "/usr/local/bin/ctl"],
                beaconFile: "/var/lib/keel/beacon.json",
                envFile: "/etc/keel/beacon.env",
                intervalSeconds: 300,
                routing: {
                  controlPlaneUrl: "http://forge-1.internal:8080",
                  vaultUrl: "http://forge-1.internal:8080",
                  consumer: `beacon-${target.name}`,
                  grantFile: "/etc/keel/beacon.grant"
                }
              })
              const timer = service.unit.replace(/\.service$/, ".timer")
              host.setFile(service.unit, rendered["keel-beacon.service"])
              host.setFile(timer, rendered["keel-beacon.timer"])
              const loaded = {
                load_state: "loaded",
                sub_state: "dead",
                main_pid: 0,
                exec_start: null,
                fragment_path: service.unit,
                process: null,
                need_daemon_reload: false,
                unit_file_state: "static",
                invocation_id: null,
                program_sha256: null
              }
              host.set(service.unit, { ...loaded, active_state: "inactive" })
              host.set(timer, { ...loaded, active_state: "active", sub_state: "waiting", fragment_path: timer })
            } else if (service.kind === "recovery-managed") {
              host.set(service.unit, {
                load_state: "loaded",
                active_state: "active",
                sub_state: "running",
                main_pid: 77,
                exec_start: "/usr/local/libexec/keel-recovery",
                fragment_path: service.unit,
                process: { pid: 77, executable: "/usr/local/libexec/keel-recovery", sha256: "d".repeat(64) },
                need_daemon_reload: false,
                unit_file_state: "enabled",
                invocation_id: "r",
                program_sha256: null
              })
            } else {
              yield* host.manager.ensure(renderUnit(service, target.os))
            }
          }
          const units = []
          for (const service of target.services)
            units.push(
              yield* host.manager.inspect({ name: service.name, unit: service.unit, program: service.program })
            )
          yield* objects.putJson(beaconKey(target.name), {
            schema: "keel.beacon/v1",
            host: target.name,
            os: target.os,
            reported_at: new Date(now).toISOString(),
            writer_version: "test",
            disks: [],
            units
          })
        }
        const installed = hosts.commands.length
        const report = yield* (yield* ServiceReconciler).tick("scheduled")
        assert.deepStrictEqual(
          report.services
            .filter((s) => s.decision.action !== "none")
            .map((s) => `${s.target}/${s.name}: ${s.decision.reason}`),
          [],
          "no repair"
        )
        assert.deepStrictEqual(
          Object.keys(report.counts).sort(),
          ["healthy", "recovery_managed"],
          JSON.stringify(report.counts)
        )
        assert.strictEqual(hosts.commands.length, installed, "no host command")
        assert.deepStrictEqual(report.alerts, [])
      }).pipe(Effect.provide(layer))
    }
  )
})
