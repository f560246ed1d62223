/**
 * `keel/groundtruth` (and `GroundTruth` in the package entry): ingest, retrieve and answer, with their errors,
 * wire schemas and migrations. The ANN graph and vector-index kernels stay internal.
 */
export { GroundTruthApi } from "../../contracts/groundtruth/Api.js"
export * from "../../contracts/groundtruth/Ask.js"
export * from "../../contracts/groundtruth/Assets.js"
export * from "../../contracts/groundtruth/Errors.js"
export * from "../../contracts/groundtruth/Ingest.js"
export * from "../../contracts/groundtruth/Search.js"
export * from "./Answerer.js"
export * from "./BrandAssets.js"
export * from "./Chunker.js"
export * from "./Embedder.js"
export * from "./GtConfig.js"
export * from "./Ingester.js"
export { groundTruthMigrations } from "./migrations.js"
export * from "./Retriever.js"
export * from "./Sources.js"
