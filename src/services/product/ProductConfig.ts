import * as path from "node:path"
import { Config, Duration, Effect } from "effect"
import { AppConfig } from "../platform/AppConfig.js"
import { durationSetting } from "../platform/DurationSetting.js"

/**
 * The site id of the demo registry's web app (`keel-demo-web` in examples/product-registry.yml), the one
 * `examples/web/index.html` reports as. In demo mode it is allow-listed when `KEEL_COLLECT_SITES` is unset.
 */
export const DEMO_SITE_ID = "keel-demo-web"

/**
 * The collectors' allow-list: `KEEL_COLLECT_SITES` when set (even empty: then nothing), else the demo
 * site in demo mode (`KEEL_DEMO_DATA`, default true), else nothing.
 */
export const collectSites = (setting: string | undefined, demoData: boolean): ReadonlySet<string> =>
  setting === undefined
    ? new Set(demoData ? [DEMO_SITE_ID] : [])
    : new Set(
        setting
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s.length > 0)
      )

/** Settings of the product-client API (documented in docs/configuration.md). */
export class ProductConfig extends Effect.Service<ProductConfig>()("product/ProductConfig", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const registry = yield* Config.option(Config.string("KEEL_PRODUCT_REGISTRY"))
    const registryPoll = yield* durationSetting("KEEL_PRODUCT_REGISTRY_POLL").pipe(
      Config.withDefault(Duration.seconds(2))
    )
    const sites = yield* Config.option(Config.string("KEEL_COLLECT_SITES"))
    const webBodyLimit = yield* Config.integer("KEEL_COLLECT_WEB_BODY_LIMIT").pipe(Config.withDefault(64 * 1024))
    const mobileBodyLimit = yield* Config.integer("KEEL_COLLECT_MOBILE_BODY_LIMIT").pipe(Config.withDefault(512 * 1024))
    const blogDir = yield* Config.option(Config.string("KEEL_BLOG_DIR"))
    return {
      /** Markdown posts imported when the server starts, if set. */
      blogDir: blogDir._tag === "Some" ? path.resolve(blogDir.value) : undefined,
      /** Site ids the analytics collectors accept events for; anything else is 403. */
      collectSites: collectSites(sites._tag === "Some" ? sites.value : undefined, app.demoData),
      webBodyLimit,
      mobileBodyLimit,
      registryFile: path.resolve(
        registry._tag === "Some" ? registry.value : path.join(app.dataDir, "product-registry.yml")
      ),
      registryPoll
    } as const
  })
}) {}
