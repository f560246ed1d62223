import * as fs from "node:fs"
import * as path from "node:path"
import { Config, Effect, Option } from "effect"
import { AppConfig } from "../../../platform/AppConfig.js"
import type { DemoSeeder } from "../../../platform/DemoData.js"
import { packageExample } from "../../../platform/Package.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"

/**
 * First start without KEEL_REGISTRY: the example three-host fleet becomes the data dir's registry
 * (never over an operator's file), and its first load records the last valid snapshot.
 */
export const fleetDemoSeeder: DemoSeeder<AppConfig | FleetRegistry> = {
  domain: "fleet",
  seed: Effect.gen(function* () {
    const configured = yield* Config.option(Config.string("KEEL_REGISTRY"))
    if (Option.isSome(configured)) return
    const app = yield* AppConfig
    const example = packageExample("registry.yml")
    const target = path.join(app.dataDir, "fleet-registry.yml")
    if (example === undefined || fs.existsSync(target)) return
    yield* Effect.sync(() => {
      fs.mkdirSync(app.dataDir, { recursive: true })
      fs.copyFileSync(example, target, fs.constants.COPYFILE_EXCL)
    })
    yield* (yield* FleetRegistry).load()
  }).pipe(Effect.orDie)
}
