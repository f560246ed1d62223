import { Layer } from "effect"
import { AdminTokens } from "../services/product/AdminTokens.js"
import { Assigner } from "../services/product/Assigner.js"
import { Blog } from "../services/product/Blog.js"
import { Collector } from "../services/product/Collector.js"
import { JourneyRegistry } from "../services/product/JourneyRegistry.js"
import { Onboarding } from "../services/product/Onboarding.js"
import { ProductConfig } from "../services/product/ProductConfig.js"
import { Readout } from "../services/product/Readout.js"
import { SqlWithSettingsLive } from "./Sql.js"

/** The product surface: experiments and their assignment, analytics collectors and readouts, onboarding, the blog. */
export const ProductServices = Layer.mergeAll(
  Collector.Default,
  Onboarding.Default,
  Blog.Default,
  Readout.Default,
  AdminTokens.Default
).pipe(
  Layer.provideMerge(Assigner.Default),
  Layer.provideMerge(JourneyRegistry.Default),
  Layer.provideMerge(ProductConfig.Default)
)

/** The product surface alone on the embedded defaults: `ctl product`, `ctl blog`. */
export const ProductLive = ProductServices.pipe(Layer.provideMerge(SqlWithSettingsLive))
