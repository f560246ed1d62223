/**
 * `keel/layers` (and `Layers` in the package entry): the Live and Test graphs an embedder composes. Building
 * one of these is what opens the database, binds a port or starts a fiber; importing them does nothing.
 */
export * from "./DemoSeeds.js"
export * from "./Fleet.js"
export * from "./GroundTruth.js"
export * from "./HostAgent.js"
export * from "./Http.js"
export * from "./Live.js"
export * from "./Market.js"
export * from "./Migrations.js"
export * from "./Objects.js"
export * from "./Platform.js"
export * from "./Product.js"
export * from "./Server.js"
export * from "./Services.js"
export * from "./Settings.js"
export * from "./Sql.js"
export * from "./Test.js"
export * from "./TextSearch.js"
export * from "./Transfer.js"
export * from "./Vault.js"
