import { fleetDemoSeeder } from "../services/fleet/control/registry/DemoData.js"
import type { FleetRegistry } from "../services/fleet/shared/registry/Registry.js"
import { groundTruthDemoSeeder } from "../services/groundtruth/DemoData.js"
import type { GtConfig } from "../services/groundtruth/GtConfig.js"
import type { Ingester } from "../services/groundtruth/Ingester.js"
import type { Agents } from "../services/market/Agents.js"
import type { ApiKeys } from "../services/market/ApiKeys.js"
import type { Chat } from "../services/market/Chat.js"
import { marketDemoSeeder } from "../services/market/DemoData.js"
import type { Ledger } from "../services/market/Ledger.js"
import type { Trading } from "../services/market/Trading.js"
import type { AppConfig } from "../services/platform/AppConfig.js"
import type { DemoSeeder } from "../services/platform/DemoData.js"
import type { Blog } from "../services/product/Blog.js"
import { productDemoSeeder } from "../services/product/DemoData.js"
import type { JourneyRegistry } from "../services/product/JourneyRegistry.js"
import type { ProductConfig } from "../services/product/ProductConfig.js"

/** Demo data for `npm start` on an empty data dir. Domains that own lists add a seeder here. */
export const AllDemoSeeders: ReadonlyArray<
  DemoSeeder<
    | ProductConfig
    | JourneyRegistry
    | Blog
    | GtConfig
    | Ingester
    | AppConfig
    | Agents
    | ApiKeys
    | Chat
    | Ledger
    | Trading
    | FleetRegistry
  >
> = [productDemoSeeder, groundTruthDemoSeeder, marketDemoSeeder, fleetDemoSeeder]
