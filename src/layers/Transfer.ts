import { Effect, Layer } from "effect"
import { searchIndexRebuild } from "../services/groundtruth/SearchIndexRebuild.js"
import { Ledger } from "../services/market/Ledger.js"
import { ledgerAuditStep } from "../services/market/LedgerAuditStep.js"
import { DatabaseTransfer, TransferDomains } from "../services/platform/DatabaseTransfer.js"
import { AllMigrations } from "./Migrations.js"
import { SqlWithSettingsLive } from "./Sql.js"
import { TextSearchFromClient } from "./TextSearch.js"

/** Every domain's migrations, and after an import: the ground truth's search index, then the ledger's audit. */
export const TransferDomainsLive = Layer.effect(
  TransferDomains,
  Effect.gen(function* () {
    return { migrations: AllMigrations, afterImport: [yield* searchIndexRebuild, yield* ledgerAuditStep] }
  })
).pipe(Layer.provide(Layer.merge(Ledger.Default, TextSearchFromClient)))

/** `ctl db export` / `ctl db import` on the database in context (SqlClient and SqlDialect). */
export const DatabaseTransferServices = DatabaseTransfer.Default.pipe(Layer.provide(TransferDomainsLive))

/** The same on the configured database, migrated (SqlLive): what `ctl db export|import` run on. */
export const DatabaseTransferLive = DatabaseTransferServices.pipe(Layer.provideMerge(SqlWithSettingsLive))
