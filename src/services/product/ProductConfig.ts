import * as path from "node:path"
import { Config, Duration, Effect } from "effect"
import { AppConfig } from "../platform/AppConfig.js"

/** Settings of the product-client API (documented in docs/configuration.md). */
export class ProductConfig extends Effect.Service<ProductConfig>()("product/ProductConfig", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const registry = yield* Config.option(Config.string("KEEL_PRODUCT_REGISTRY"))
    const registryPoll = yield* Config.duration("KEEL_PRODUCT_REGISTRY_POLL").pipe(
      Config.withDefault(Duration.seconds(2))
    )
    const sites = yield* Config.string("KEEL_COLLECT_SITES").pipe(Config.withDefault(""))
    const webBodyLimit = yield* Config.integer("KEEL_COLLECT_WEB_BODY_LIMIT").pipe(Config.withDefault(64 * 1024))
    const mobileBodyLimit = yield* Config.integer("KEEL_COLLECT_MOBILE_BODY_LIMIT").pipe(Config.withDefault(512 * 1024))
    const blogDir = yield* Config.option(Config.string("KEEL_BLOG_DIR"))
    return {
      /** Markdown posts imported when the server starts, if set. */
      blogDir: blogDir._tag === "Some" ? path.resolve(blogDir.value) : undefined,
      /** Site ids the analytics collectors accept events for; anything else is 403. */
      collectSites: new Set(
        sites
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s.length > 0)
      ),
      webBodyLimit,
      mobileBodyLimit,
      registryFile: path.resolve(
        registry._tag === "Some" ? registry.value : path.join(app.dataDir, "product-registry.yml")
      ),
      registryPoll
    } as const
  })
}) {}
