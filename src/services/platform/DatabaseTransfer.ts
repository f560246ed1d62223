import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Either, Stream } from "effect"
import { type DomainMigrations, sqlDefect } from "./Database.js"
import { packageVersion } from "./Package.js"
import { orDieSql } from "./SqlEdge.js"
import { SqlDialect } from "./sql/SqlDialect.js"
import * as Catalog from "./transfer/Catalog.js"
import {
  ActorWorkPending,
  type ExportError,
  ExportFileInvalid,
  ImportCheckFailed,
  type ImportError,
  MigrationMismatch,
  TargetNotEmpty,
  UnexportableValue
} from "./transfer/Errors.js"
import { type LineSink, type LineSource, openSink, openSource, shownPath } from "./transfer/Files.js"
import * as Format from "./transfer/Format.js"
import { makeLoader, type TableCount, type TransferOptions } from "./transfer/Loader.js"

/** What a check after an import found (the market ledger's audit, a rebuilt index); `ok: false` rolls it back. */
export interface ImportCheck {
  readonly ok: boolean
  readonly summary: string
  readonly problems: ReadonlyArray<string>
}

/** A domain's work once an import's rows are in, inside its transaction: rebuild what is derived, or check. */
export interface ImportStep {
  readonly name: string
  readonly run: Effect.Effect<ImportCheck>
}

/**
 * What the domains bring to a transfer: their migrations (which say what Keel's tables are, and which a file's
 * migrations must equal) and their steps after an import, in order. Composed in src/layers/Transfer.ts.
 */
export class TransferDomains extends Context.Tag("platform/TransferDomains")<
  TransferDomains,
  { readonly migrations: ReadonlyArray<DomainMigrations>; readonly afterImport: ReadonlyArray<ImportStep> }
>() {}

export type { TableCount, TransferOptions, TransferProgress } from "./transfer/Loader.js"

export type Engine = "sqlite" | "postgresql"

export interface ExportReport {
  readonly file: string
  readonly engine: Engine
  readonly formatVersion: number
  readonly tables: ReadonlyArray<TableCount>
  readonly rows: number
  readonly bytes: number
  readonly skipped: ReadonlyArray<Format.SkippedTable>
  readonly migrations: Format.AppliedMigrations
}

export interface ImportReport {
  readonly file: string
  readonly engine: Engine
  /** What the header says about where the file came from. */
  readonly source: { readonly engine: Engine; readonly keel: string; readonly exportedAt: string }
  readonly tables: ReadonlyArray<TableCount>
  readonly rows: number
  /** PostgreSQL: each identity column and the id it hands out next (past the highest imported). */
  readonly identities: ReadonlyArray<{ readonly table: string; readonly column: string; readonly next: number }>
  readonly checks: ReadonlyArray<ImportCheck & { readonly name: string }>
}

const ACTOR_TABLES =
  "the actor runtime's own (@effect/cluster): the target's runtime makes its own, and an export is refused while it holds unprocessed messages"

/** A range of migration ids as people read them: `0001–0005`, `0001–0003, 0005`, `none`. */
export const migrationIds = (ids: ReadonlyArray<number>) => {
  const pad = (n: number) => String(n).padStart(4, "0")
  const runs: Array<string> = []
  for (let i = 0; i < ids.length; ) {
    let j = i
    while (j + 1 < ids.length && ids[j + 1] === ids[j]! + 1) j++
    runs.push(j === i ? pad(ids[i]!) : `${pad(ids[i]!)}–${pad(ids[j]!)}`)
    i = j + 1
  }
  return runs.length === 0 ? "none" : runs.join(", ")
}

/** Where the file's migrations and the database's differ, domain by domain (empty when they are the same). */
export const migrationDifferences = (file: Format.AppliedMigrations, here: Format.AppliedMigrations) => {
  const domains = [...new Set([...Object.keys(here), ...Object.keys(file)])]
  return domains.flatMap((domain) => {
    const ours = (here[domain] ?? []).map((m) => m.id)
    const theirs = (file[domain] ?? []).map((m) => m.id)
    return ours.join() === theirs.join()
      ? []
      : [`${domain} ${migrationIds(theirs)} in the file, ${migrationIds(ours)} here`]
  })
}

/**
 * Moving an installation between databases (docs/database.md, "Moving an installation"): `exportTo` writes every
 * Keel table of this database to a file in one consistent read; `importFrom` fills an empty database from such a
 * file in one transaction — the same migrations, rows in foreign-key order, PostgreSQL's identities moved past the
 * highest id, then the domains' steps (the ground truth's search index, the market ledger's audit), all or nothing.
 */
export class DatabaseTransfer extends Effect.Service<DatabaseTransfer>()("platform/DatabaseTransfer", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    const domains = yield* TransferDomains
    const reference = yield* Effect.cached(Catalog.referenceSchema(domains.migrations))
    const engine: Engine = dialect.name === "pg" ? "postgresql" : "sqlite"
    const domainNames = domains.migrations.map((set) => set.domain)

    /** One read of the whole database: SQLite's write lock (BEGIN IMMEDIATE), a PostgreSQL snapshot. */
    const snapshot = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql.withTransaction(
        engine === "postgresql"
          ? Effect.zipRight(sqlDefect(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`), effect)
          : effect
      )

    const skippedTables = (ref: Catalog.Reference) =>
      Effect.map(sqlDefect(Catalog.storedTables(sql)), (stored) =>
        stored
          .map((t) => t.name)
          .filter((name) => !Catalog.isHistory(name) && !ref.tables.some((t) => t.name === name))
          .map((table) => ({
            table,
            reason: table.startsWith("cluster_")
              ? ACTOR_TABLES
              : ref.derived.includes(table)
                ? "derived (a full-text index): the import rebuilds it"
                : "not created by Keel's migrations"
          }))
      )

    const writeTable = (
      sink: LineSink,
      table: Catalog.KeelTable,
      place: { index: number; tables: number },
      options: TransferOptions
    ) =>
      Effect.gen(function* () {
        const total = yield* sqlDefect(Catalog.countRows(sql, table.name))
        yield* sink.write([JSON.stringify({ table: table.name, rows: total, columns: table.columns })])
        let done = 0
        yield* Stream.runForEach(Catalog.rowPages(sql, table), (page) =>
          Effect.gen(function* () {
            const lines = yield* Effect.try({
              try: () => page.map((values) => JSON.stringify(Format.encodeRow(table.columns, values))),
              catch: (misfit) =>
                new UnexportableValue({
                  code: "UNEXPORTABLE_VALUE",
                  detail: `${table.name}, row ${done + 1}: ${misfit instanceof Format.ValueMisfit ? misfit.reason : String(misfit)}`
                })
            })
            yield* sink.write(lines)
            done += page.length
            if (options.onProgress !== undefined)
              yield* options.onProgress({ table: table.name, done, total, ...place })
          })
        ).pipe(sqlDefect)
        return { table: table.name, rows: done }
      })

    const writeAll = (ref: Catalog.Reference, sink: LineSink, options: TransferOptions) =>
      Effect.gen(function* () {
        const pending = yield* sqlDefect(Catalog.pendingActorWork(sql))
        if (pending.length > 0) {
          const messages = pending.reduce((n, p) => n + p.messages, 0)
          return yield* new ActorWorkPending({
            code: "ACTOR_WORK_PENDING",
            detail: `the actor runtime holds ${messages} unprocessed message(s) (${pending.map((p) => `${p.entityType} ${p.messages}`).join(", ")}), which an export does not carry: start Keel on this database, let that work finish, stop it and export again`
          })
        }
        const migrations = yield* sqlDefect(Catalog.appliedMigrations(sql, domainNames))
        const skipped = yield* skippedTables(ref)
        const header: Format.Header = {
          format: Format.FORMAT,
          version: Format.FORMAT_VERSION,
          keel: packageVersion(),
          exported_at: new Date(yield* Clock.currentTimeMillis).toISOString(),
          engine,
          migrations,
          skipped
        }
        yield* sink.write([JSON.stringify(header)])
        const tables: Array<TableCount> = []
        for (const [i, table] of ref.tables.entries())
          tables.push(yield* writeTable(sink, table, { index: i + 1, tables: ref.tables.length }, options))
        const rows = tables.reduce((n, t) => n + t.rows, 0)
        yield* sink.write([JSON.stringify({ end: true, tables: tables.length, rows } satisfies Format.Trailer)])
        return { tables, rows, skipped, migrations }
      })

    /** Writes every Keel table of this database to `file` (`-`: stdout). */
    const exportTo = (file: string, options: TransferOptions = {}): Effect.Effect<ExportReport, ExportError> =>
      Effect.scoped(
        Effect.gen(function* () {
          const ref = yield* reference
          const sink = yield* openSink(file)
          const written = yield* snapshot(writeAll(ref, sink, options)).pipe(orDieSql)
          const bytes = yield* sink.commit
          return { file: shownPath(file), engine, formatVersion: Format.FORMAT_VERSION, bytes, ...written }
        })
      )

    // --- import ---

    const readHeader = (source: LineSource, file: string) =>
      Effect.flatMap(source.next, (text) =>
        Either.match(Format.parseHeader(text), {
          onLeft: (reason) =>
            Effect.fail(
              new ExportFileInvalid({
                code: "EXPORT_FILE_INVALID",
                detail: `${shownPath(file)} is not an export this Keel reads: ${reason}`
              })
            ),
          onRight: Effect.succeed
        })
      )

    /** Every Keel table holds nothing, or only what a fresh migration wrote (market_api_key_changes' counter). */
    const refuseNonEmpty = (ref: Catalog.Reference) =>
      Effect.gen(function* () {
        const holding: Array<string> = []
        for (const table of ref.tables) {
          const count = yield* sqlDefect(Catalog.countRows(sql, table.name))
          if (count === 0) continue
          if (table.seeded.length > 0) {
            const pages = yield* sqlDefect(Stream.runCollect(Catalog.rowPages(sql, table)))
            const rows = [...pages].flat().map((values) => JSON.stringify(Format.encodeRow(table.columns, values)))
            if (rows.sort().join("\n") === table.seeded.join("\n")) continue
          }
          holding.push(`${table.name} ${count}`)
        }
        if (holding.length > 0)
          return yield* new TargetNotEmpty({
            code: "TARGET_NOT_EMPTY",
            detail: `the database already holds rows (${holding.slice(0, 4).join(", ")}${holding.length > 4 ? `, and ${holding.length - 4} more tables` : ""}): an import only fills a new, empty database`
          })
      })

    const refuseOtherMigrations = (header: Format.Header) =>
      Effect.gen(function* () {
        const here = yield* sqlDefect(Catalog.appliedMigrations(sql, domainNames))
        const differences = migrationDifferences(header.migrations, here)
        if (differences.length > 0)
          return yield* new MigrationMismatch({
            code: "MIGRATION_MISMATCH",
            detail: `the file was exported by Keel ${header.keel} at other migrations than this database (Keel ${packageVersion()}) is at — ${differences.join("; ")}: export with the Keel version that imports (any ctl command, e.g. ctl db migrate, brings the source up to date first)`
          })
      })

    const loader = makeLoader({ sql, dialect })

    /** PostgreSQL: each identity column hands out ids past the highest one imported (SQLite does so by itself). */
    const resetIdentities = (ref: Catalog.Reference) =>
      Effect.gen(function* () {
        const columns = (yield* Catalog.identityColumns(sql)).filter((c) => ref.tables.some((t) => t.name === c.table))
        const moved: Array<{ table: string; column: string; next: number }> = []
        for (const { column, table } of columns) {
          const [row] = yield* sql.unsafe<{ next: string | number }>(
            dialect.text(
              `SELECT setval(pg_get_serial_sequence(?, ?), coalesce(max(${Catalog.quote(column)}), 0) + 1, false) AS next FROM ${Catalog.quote(table)}`
            ),
            [Catalog.quote(table), column]
          )
          moved.push({ table, column, next: Number(row?.next) })
        }
        return moved
      }).pipe(sqlDefect)

    const runChecks = Effect.gen(function* () {
      const checks: Array<ImportCheck & { name: string }> = []
      for (const step of domains.afterImport) checks.push({ name: step.name, ...(yield* step.run) })
      const failed = checks.filter((check) => !check.ok)
      if (failed.length > 0)
        return yield* new ImportCheckFailed({
          code: "IMPORT_CHECK_FAILED",
          detail: `${failed.map((check) => `${check.name}: ${check.summary}`).join("; ")}: the import was rolled back`,
          problems: failed.flatMap((check) => check.problems)
        })
      return checks
    })

    /** Fills this database, which must be empty, from `file` (`-`: stdin): all of it, or nothing. */
    const importFrom = (file: string, options: TransferOptions = {}): Effect.Effect<ImportReport, ImportError> =>
      Effect.scoped(
        Effect.gen(function* () {
          const ref = yield* reference
          const source = yield* openSource(file)
          const header = yield* readHeader(source, file)
          const done = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* refuseNonEmpty(ref)
                yield* refuseOtherMigrations(header)
                const tables = yield* loader.load(ref, source, file, options)
                const identities = yield* resetIdentities(ref)
                const checks = yield* runChecks
                return { tables, identities, checks }
              })
            )
            .pipe(orDieSql)
          return {
            file: shownPath(file),
            engine,
            source: { engine: header.engine, keel: header.keel, exportedAt: header.exported_at },
            rows: done.tables.reduce((n, t) => n + t.rows, 0),
            ...done
          }
        })
      )

    return { exportTo, importFrom } as const
  })
}) {}
