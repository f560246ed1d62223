import { lazyLayer } from "./Lazy.js"

/**
 * The layers `ctl` commands run on (src/layers/), each loaded when a command that needs it runs: the command
 * tree imports these handles, never the layer modules (which reach every service they compose).
 */
export const ServicesLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.ServicesLive))
// One domain's graph each (issue 43: a command builds only what it uses; each module imports only its domain).
export const MarketLive = lazyLayer(() => import("../layers/Market.js").then((m) => m.MarketLive))
export const GroundTruthLive = lazyLayer(() => import("../layers/GroundTruth.js").then((m) => m.GroundTruthLive))
export const ProductLive = lazyLayer(() => import("../layers/Product.js").then((m) => m.ProductLive))
export const FleetServicesLive = lazyLayer(() => import("../layers/Fleet.js").then((m) => m.FleetServicesLive))
export const DatabaseLive = lazyLayer(() => import("../layers/Platform.js").then((m) => m.DatabaseLive))
export const ClusterStatusLive = lazyLayer(() => import("../layers/Platform.js").then((m) => m.ClusterStatusLive))
export const LeasesLive = lazyLayer(() => import("../layers/Platform.js").then((m) => m.LeasesLive))
export const DatabaseTransferLive = lazyLayer(() => import("../layers/Transfer.js").then((m) => m.DatabaseTransferLive))
export const SqlUnmigratedLive = lazyLayer(() => import("../layers/Sql.js").then((m) => m.SqlUnmigratedLive))
export const VaultOnlyLive = lazyLayer(() => import("../layers/Vault.js").then((m) => m.VaultOnlyLive))
export const HostOpsLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.HostOpsLive))
export const HostOpsPreviewLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.HostOpsPreviewLive))
export const JanitorLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.JanitorLive))
export const JanitorPreviewLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.JanitorPreviewLive))
export const HostStateLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.HostStateLive))
export const ReconcilerOpsLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.ReconcilerOpsLive))
export const RecoveryLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.RecoveryLive))
export const RolloutLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.RolloutLive))
export const TagLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.TagLive))
export const PrecheckRunnerLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.PrecheckRunnerLive))
export const RunnerUnitLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.RunnerUnitLive))
export const GatewayLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.GatewayLive))
export const AppConfigLive = lazyLayer(() =>
  import("../services/platform/AppConfig.js").then((m) => m.AppConfig.Default)
)
export const FleetConfigLive = lazyLayer(() => import("../layers/Live.js").then((m) => m.FleetConfigLive))
