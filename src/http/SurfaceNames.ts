/** The HTTP surfaces `ctl serve` can run; their seed paths do not collide, so all fit on one port. */
export const SurfaceNames = ["marketplace", "groundtruth", "product", "controlplane", "vault"] as const
export type SurfaceName = (typeof SurfaceNames)[number]

export const docsPath = (surface: SurfaceName) => `/docs/${surface}` as const
export const openApiPath = (surface: SurfaceName) => `/docs/${surface}/openapi.json` as const
