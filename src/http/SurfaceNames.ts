/** The HTTP surfaces `ctl serve` can run; their seed paths do not collide, so all fit on one port. */
export const SurfaceNames = ["marketplace", "groundtruth", "product", "controlplane", "vault"] as const
export type SurfaceName = (typeof SurfaceNames)[number]

/** What `ctl serve --surface` may name: the API surfaces and the web dashboard (`ui`, docs/dashboard.md). */
export const ServedNames = [...SurfaceNames, "ui"] as const
export type ServedName = (typeof ServedNames)[number]

export const docsPath = (surface: SurfaceName) => `/docs/${surface}` as const
export const openApiPath = (surface: SurfaceName) => `/docs/${surface}/openapi.json` as const
