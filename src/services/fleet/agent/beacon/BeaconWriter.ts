import * as fs from "node:fs/promises"
import { Clock, Effect } from "effect"
import type { HostBeacon } from "../../../../contracts/fleet/Beacon.js"
import { packageVersion } from "../../../platform/Package.js"
import type { Target } from "../../shared/registry/Schema.js"
import { ServiceManager } from "../../shared/units/ServiceManager.js"

/**
 * statfs of one mount as exact byte counts (blocks × block size, computed in bigint). A mount that
 * cannot be read is reported with its error and null counts: unknown is not zero.
 */
export const diskState = (mount: string) =>
  Effect.promise(async () => {
    try {
      const s = await fs.statfs(mount, { bigint: true })
      return {
        mount,
        total_bytes: Number(s.blocks * s.bsize),
        free_bytes: Number(s.bfree * s.bsize),
        available_bytes: Number(s.bavail * s.bsize),
        error: null
      }
    } catch (error) {
      return { mount, total_bytes: null, free_bytes: null, available_bytes: null, error: (error as Error).message }
    }
  })

/** Collects this host's beacon: its declared mounts and the state of its declared units. */
export const collectBeacon = (target: Target) =>
  Effect.gen(function* () {
    const manager = yield* ServiceManager
    const disks = yield* Effect.forEach(target.mounts, diskState)
    const units = yield* Effect.forEach(target.services, (service) =>
      manager.inspect({ name: service.name, unit: service.unit, program: service.program })
    )
    const now = yield* Clock.currentTimeMillis
    return {
      schema: "keel.beacon/v1",
      host: target.name,
      os: target.os,
      reported_at: new Date(now).toISOString(),
      writer_version: packageVersion(),
      disks,
      units
    } satisfies HostBeacon
  })
