import { fleetMigrations } from "../services/fleet/shared/migrations.js"
import { groundTruthMigrations } from "../services/groundtruth/migrations.js"
import { marketMigrations } from "../services/market/migrations.js"
import type { DomainMigrations } from "../services/platform/Database.js"
import { platformMigrations } from "../services/platform/migrations/platform.js"
import { productMigrations } from "../services/product/migrations.js"

/** Every domain's migrations, in the order they run. Domains add their set here. */
export const AllMigrations: ReadonlyArray<DomainMigrations> = [
  platformMigrations,
  productMigrations,
  groundTruthMigrations,
  marketMigrations,
  fleetMigrations
]

export const AllDomains = AllMigrations.map((set) => set.domain)
