/**
 * `keel/product` (and `Product` in the package entry): assignment, analytics, onboarding, blog and readouts,
 * with their errors, wire schemas and migrations. SQL kernels stay internal.
 */
export * from "../../contracts/product/Analytics.js"
export { ProductApi } from "../../contracts/product/Api.js"
export * from "../../contracts/product/Assignment.js"
export * from "../../contracts/product/Blog.js"
export * from "../../contracts/product/Onboarding.js"
export * from "../../contracts/product/Readout.js"
export * from "./AdminTokens.js"
export * from "./Assigner.js"
export * from "./Blog.js"
export * from "./Collector.js"
export * from "./Hashing.js"
export * from "./JourneyRegistry.js"
export { productMigrations } from "./migrations.js"
export * from "./Onboarding.js"
export * from "./ProductConfig.js"
export * from "./Readout.js"
