import { Schema } from "effect"

/**
 * Why `ctl db export` / `ctl db import` (the `DatabaseTransfer` service) refused or failed: each a stable
 * UPPER_SNAKE `code` and a one-line `detail` (docs/database.md, "Moving an installation"). An import that fails
 * with any of them has rolled back: the target holds what it held before.
 */

/** The file cannot be opened, read or written (a missing directory, no permission, a full disk). */
export class TransferFileUnavailable extends Schema.TaggedError<TransferFileUnavailable>()("TransferFileUnavailable", {
  code: Schema.Literal("TRANSFER_FILE_UNAVAILABLE"),
  detail: Schema.String
}) {}

/** The actor runtime holds work not done yet (workflow steps, messages): exporting would drop it. */
export class ActorWorkPending extends Schema.TaggedError<ActorWorkPending>()("ActorWorkPending", {
  code: Schema.Literal("ACTOR_WORK_PENDING"),
  detail: Schema.String
}) {}

/** A stored value the format cannot carry as its column's type (a SQLite column holding another type's value). */
export class UnexportableValue extends Schema.TaggedError<UnexportableValue>()("UnexportableValue", {
  code: Schema.Literal("UNEXPORTABLE_VALUE"),
  detail: Schema.String
}) {}

/** Not an export file, a format version this Keel does not read, a malformed line, or a truncated file. */
export class ExportFileInvalid extends Schema.TaggedError<ExportFileInvalid>()("ExportFileInvalid", {
  code: Schema.Literal("EXPORT_FILE_INVALID"),
  detail: Schema.String
}) {}

/** The file was exported at other migrations than the target database is at. */
export class MigrationMismatch extends Schema.TaggedError<MigrationMismatch>()("MigrationMismatch", {
  code: Schema.Literal("MIGRATION_MISMATCH"),
  detail: Schema.String
}) {}

/** The target database already holds rows: an import only fills a new, empty database. */
export class TargetNotEmpty extends Schema.TaggedError<TargetNotEmpty>()("TargetNotEmpty", {
  code: Schema.Literal("TARGET_NOT_EMPTY"),
  detail: Schema.String
}) {}

/** The target database refused a row (PostgreSQL's text holds no U+0000, for one). */
export class ImportFailed extends Schema.TaggedError<ImportFailed>()("ImportFailed", {
  code: Schema.Literal("IMPORT_FAILED"),
  detail: Schema.String
}) {}

/** A check after the rows were in (the market ledger's audit) found a problem: the import was rolled back. */
export class ImportCheckFailed extends Schema.TaggedError<ImportCheckFailed>()("ImportCheckFailed", {
  code: Schema.Literal("IMPORT_CHECK_FAILED"),
  detail: Schema.String,
  problems: Schema.Array(Schema.String)
}) {}

export type ExportError = TransferFileUnavailable | ActorWorkPending | UnexportableValue
export type ImportError =
  | TransferFileUnavailable
  | ExportFileInvalid
  | MigrationMismatch
  | TargetNotEmpty
  | ImportFailed
  | ImportCheckFailed
