import { ControlPlaneApi } from "../contracts/controlplane/Api.js"
import { GroundTruthApi } from "../contracts/groundtruth/Api.js"
import { MarketplaceApi } from "../contracts/market/Api.js"
import { ProductApi } from "../contracts/product/Api.js"
import { VaultApi } from "../contracts/vault/Api.js"

/** Each surface's HttpApi, by name (the names alone, for `ctl serve`'s options, are in SurfaceNames.ts). */
export const surfaceApis = {
  marketplace: MarketplaceApi,
  groundtruth: GroundTruthApi,
  product: ProductApi,
  controlplane: ControlPlaneApi,
  vault: VaultApi
} as const
