/**
 * Keel as a library: one namespace per domain, each chosen on purpose (issue 43). Internals (direct SQL, key files,
 * process spawning, signing primitives, hot-path kernels) are not part of it. Importing this module starts nothing
 * and opens nothing: every resource lives in a Layer that the embedder builds (see README "Embedding").
 * Each domain is also a subpath: `keel/market`, `keel/groundtruth`, `keel/product`, `keel/fleet`, `keel/layers`;
 * the typed HTTP clients are `keel/clients` (runtime-free).
 */
export * as Cli from "./cli/index.js"
export * as Clients from "./clients.js"
export * as Http from "./http/index.js"
export * as Layers from "./layers/index.js"
export * as Fleet from "./services/fleet/index.js"
export * as GroundTruth from "./services/groundtruth/index.js"
export * as Market from "./services/market/index.js"
export * as Platform from "./services/platform/index.js"
export * as Product from "./services/product/index.js"
