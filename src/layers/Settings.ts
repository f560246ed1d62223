import { Layer } from "effect"
import { FleetConfig } from "../services/fleet/shared/FleetConfig.js"
import { GtConfig } from "../services/groundtruth/GtConfig.js"
import { MarketConfig } from "../services/market/MarketConfig.js"
import { LoopbackTrust } from "../services/platform/LoopbackTrust.js"
import { TrustedProxies } from "../services/platform/TrustedProxies.js"
import { AdminTokens } from "../services/product/AdminTokens.js"
import { ProductConfig } from "../services/product/ProductConfig.js"

/**
 * Every domain's settings, read and checked: each of these only reads Config (no database, no file, no fiber).
 * A command built on one domain's graph still stops at start on an invalid setting of another domain, as it did
 * when every command built every service (docs/configuration.md: an invalid value stops the process before it
 * does anything).
 */
export const SettingsChecked = Layer.mergeAll(
  GtConfig.Default,
  MarketConfig.Default,
  ProductConfig.Default,
  FleetConfig.Default,
  TrustedProxies.Default,
  LoopbackTrust.Default,
  AdminTokens.Default
)
