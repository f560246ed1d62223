import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import type { DemoSeeder } from "../platform/DemoData.js"
import { JourneyRegistry } from "./JourneyRegistry.js"
import { ProductConfig } from "./ProductConfig.js"

/** The example registry shipped in the package (examples/product-registry.yml), found from src/ or dist/. */
const exampleRegistry = () => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = path.join(dir, "examples", "product-registry.yml")
    if (fs.existsSync(candidate)) return candidate
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** First start: put the example journey registry in place (never over an operator's file) and load it. */
export const productDemoSeeder: DemoSeeder<ProductConfig | JourneyRegistry> = {
  domain: "product",
  seed: Effect.gen(function* () {
    const config = yield* ProductConfig
    const example = exampleRegistry()
    if (example === undefined || fs.existsSync(config.registryFile)) return
    yield* Effect.sync(() => {
      fs.mkdirSync(path.dirname(config.registryFile), { recursive: true })
      fs.copyFileSync(example, config.registryFile, fs.constants.COPYFILE_EXCL)
    })
    yield* (yield* JourneyRegistry).reload
  }).pipe(Effect.orDie)
}
