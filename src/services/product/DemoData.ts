import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import type { DemoSeeder } from "../platform/DemoData.js"
import { packageExample } from "../platform/Package.js"
import { Blog } from "./Blog.js"
import { JourneyRegistry } from "./JourneyRegistry.js"
import { ProductConfig } from "./ProductConfig.js"

/**
 * First start: put the example journey registry in place (never over an operator's file) and load
 * it, and import the example blog posts.
 */
export const productDemoSeeder: DemoSeeder<ProductConfig | JourneyRegistry | Blog> = {
  domain: "product",
  seed: Effect.gen(function* () {
    const config = yield* ProductConfig
    const registry = packageExample("product-registry.yml")
    if (registry !== undefined && !fs.existsSync(config.registryFile)) {
      yield* Effect.sync(() => {
        fs.mkdirSync(path.dirname(config.registryFile), { recursive: true })
        fs.copyFileSync(registry, config.registryFile, fs.constants.COPYFILE_EXCL)
      })
      yield* (yield* JourneyRegistry).reload
    }
    const posts = packageExample("blog")
    if (posts !== undefined) yield* (yield* Blog).importDirectory(posts)
  }).pipe(Effect.orDie)
}
