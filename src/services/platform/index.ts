/**
 * `Platform` in the package entry: only what an embedder needs — configuration, the database layer, logging,
 * health, leases, moving a database (`DatabaseTransfer`), the object-store, vault and notifier ports and their
 * adapters, and the platform migrations. Direct SQL, key files, process spawning and signing primitives stay internal.
 */
export * from "../../contracts/shared/Health.js"
export * from "../../contracts/shared/ObjectErrors.js"
export * from "../../contracts/vault/Errors.js"
export * from "../../contracts/vault/Schemas.js"
export * from "./AppConfig.js"
export * from "./Database.js"
export * from "./DatabaseTransfer.js"
export { exposedEnvironNames, scrubEnvironBlock } from "./EnvironBlock.js"
export * from "./Health.js"
export * from "./Leases.js"
export * from "./Logging.js"
export { platformMigrations } from "./migrations/platform.js"
export * from "./notify/InProcessNotifier.js"
export * from "./notify/Notifier.js"
export * from "./notify/NotifierFromClient.js"
export * from "./objects/FsObjectStore.js"
export * from "./objects/MemoryObjectStore.js"
export * from "./objects/ObjectStore.js"
export { packageVersion } from "./Package.js"
export * from "./Shutdown.js"
export * from "./transfer/Errors.js"
export * from "./vault/EmbeddedVault.js"
export * from "./vault/Vault.js"
