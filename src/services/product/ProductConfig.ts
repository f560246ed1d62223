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
    return {
      registryFile: path.resolve(
        registry._tag === "Some" ? registry.value : path.join(app.dataDir, "product-registry.yml")
      ),
      registryPoll
    } as const
  })
}) {}
