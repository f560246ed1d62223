import { Console, Effect } from "effect"
import { AllDomains, AllMigrations } from "../../layers/Migrations.js"
import { Database, type DatabaseInfo, migrate } from "../../services/platform/Database.js"
import {
  DatabaseTransfer,
  type ExportReport,
  type ImportReport,
  type TransferProgress
} from "../../services/platform/DatabaseTransfer.js"
import { STANDARD_STREAM } from "../../services/platform/transfer/Files.js"
import type { exportConfig, importConfig } from "../db.js"
import { DatabaseTransferLive } from "../Layers.js"
import type { Parsed } from "../Lazy.js"
import { emit, table, usageError } from "../Output.js"

/** SQLite: `sqlite <file> (journal wal)`; PostgreSQL: `postgresql <url without password> (server 15.20)`. */
const headline = (i: DatabaseInfo) =>
  i.engine === "postgresql"
    ? `postgresql ${i.url ?? "(url not known)"} (server ${i.serverVersion ?? "unknown"})`
    : `${i.dialect} ${i.file} (journal ${i.journalMode})`

export const status = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const database = yield* Database
    const info = yield* database.info(AllDomains)
    yield* emit(
      json,
      info,
      (i) =>
        `${headline(i)}\n` +
        table(
          ["DOMAIN", "ID", "MIGRATION"],
          i.migrations.map((m) => [m.domain, String(m.id).padStart(4, "0"), m.name])
        )
    )
  })

export const migrateAll = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const applied = yield* migrate(AllMigrations).pipe(Effect.orDie)
    yield* emit(json, { applied }, ({ applied }) =>
      applied.length === 0
        ? "database is up to date"
        : applied.map((m) => `applied ${m.domain}/${String(m.id).padStart(4, "0")}_${m.name}`).join("\n")
    )
  })

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`
const count = (n: number) => n.toLocaleString("en")

/** One progress line on a terminal (stderr), overwritten as rows go by; nothing in --json runs or off a terminal. */
const progressLine = (verb: string, json: boolean) => {
  const tty = process.stderr.isTTY === true && !json
  return {
    onProgress: (p: TransferProgress) =>
      Effect.sync(() => {
        if (tty)
          process.stderr.write(
            `\r\x1b[2K${verb} ${p.table}: ${count(p.done)}/${count(p.total)} rows (table ${p.index} of ${p.tables})`
          )
      }),
    clear: Effect.sync(() => {
      if (tty) process.stderr.write("\r\x1b[2K")
    })
  }
}

const exportJson = (r: ExportReport) => ({
  file: r.file,
  engine: r.engine,
  format_version: r.formatVersion,
  tables: r.tables,
  rows: r.rows,
  bytes: r.bytes,
  skipped: r.skipped,
  migrations: r.migrations
})

const exportText = (r: ReturnType<typeof exportJson>) => {
  const reasons = new Map<string, Array<string>>()
  for (const s of r.skipped) reasons.set(s.reason, [...(reasons.get(s.reason) ?? []), s.table])
  return [
    `exported ${r.tables.length} tables, ${count(r.rows)} rows from ${r.engine} to ${r.file} (${mib(r.bytes)})`,
    ...[...reasons].map(([reason, tables]) => `not exported: ${tables.join(", ")}: ${reason}`)
  ].join("\n")
}

export const exportDatabase = ({ file, json }: Parsed<typeof exportConfig>) =>
  Effect.gen(function* () {
    if (json && file === STANDARD_STREAM)
      return yield* usageError("db export: --json prints its report on stdout, where - writes the export: give a FILE")
    const progress = progressLine("exporting", json)
    const report = yield* Effect.flatMap(DatabaseTransfer, (transfer) => transfer.exportTo(file, progress)).pipe(
      Effect.ensuring(progress.clear),
      Effect.provide(DatabaseTransferLive)
    )
    // With `-` stdout carries the export itself: the report goes to stderr.
    if (file === STANDARD_STREAM) yield* Console.error(exportText(exportJson(report)))
    else yield* emit(json, exportJson(report), exportText)
  })

const importJson = (r: ImportReport) => ({
  file: r.file,
  engine: r.engine,
  source: { engine: r.source.engine, keel: r.source.keel, exported_at: r.source.exportedAt },
  tables: r.tables,
  rows: r.rows,
  identities: r.identities,
  checks: r.checks
})

const importText = (r: ReturnType<typeof importJson>) =>
  [
    `imported ${r.tables.length} tables, ${count(r.rows)} rows into ${r.engine} from ${r.file} (exported from ${r.source.engine} by Keel ${r.source.keel} at ${r.source.exported_at})`,
    ...(r.identities.length === 0
      ? []
      : [
          `identities continue past the highest id: ${r.identities.map((i) => `${i.table}.${i.column} next ${i.next}`).join(", ")}`
        ]),
    ...r.checks.map((c) => `${c.name}: ${c.summary}`)
  ].join("\n")

export const importDatabase = ({ file, json }: Parsed<typeof importConfig>) =>
  Effect.gen(function* () {
    const progress = progressLine("importing", json)
    const report = yield* Effect.flatMap(DatabaseTransfer, (transfer) => transfer.importFrom(file, progress)).pipe(
      Effect.ensuring(progress.clear),
      // The problems a failed check found, one a line on stderr (the error itself is one line, or --json's document).
      Effect.tapError((error) =>
        error._tag === "ImportCheckFailed" ? Console.error(error.problems.map((p) => `  ${p}`).join("\n")) : Effect.void
      ),
      Effect.provide(DatabaseTransferLive)
    )
    yield* emit(json, importJson(report), importText)
  })
