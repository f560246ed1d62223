import { ControlPlaneApi } from "../contracts/controlplane/Api.js"
import { GroundTruthApi } from "../contracts/groundtruth/Api.js"
import { MarketplaceApi } from "../contracts/market/Api.js"
import { ProductApi } from "../contracts/product/Api.js"
import { VaultApi } from "../contracts/vault/Api.js"

/** The HTTP surfaces `ctl serve` can run; their seed paths do not collide, so all fit on one port. */
export const SurfaceNames = ["marketplace", "groundtruth", "product", "controlplane", "vault"] as const
export type SurfaceName = (typeof SurfaceNames)[number]

export const surfaceApis = {
  marketplace: MarketplaceApi,
  groundtruth: GroundTruthApi,
  product: ProductApi,
  controlplane: ControlPlaneApi,
  vault: VaultApi
} as const

export const docsPath = (surface: SurfaceName) => `/docs/${surface}` as const
export const openApiPath = (surface: SurfaceName) => `/docs/${surface}/openapi.json` as const
