import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either } from "effect"
import type { SqlDialectShape } from "../sql/SqlDialect.js"
import { type KeelTable, quote, type Reference } from "./Catalog.js"
import { ExportFileInvalid, ImportFailed } from "./Errors.js"
import { type LineSource, shownPath } from "./Files.js"
import * as Format from "./Format.js"

export interface TransferProgress {
  readonly table: string
  /** Rows of `table` done so far, of `total`. */
  readonly done: number
  readonly total: number
  /** The table's place, from 1, among `tables`. */
  readonly index: number
  readonly tables: number
}

export interface TransferOptions {
  readonly onProgress?: (progress: TransferProgress) => Effect.Effect<void>
}

export interface TableCount {
  readonly table: string
  readonly rows: number
}

/** A table being filled from the file: its line, the rows so far and those not inserted yet. */
interface Filling {
  readonly table: KeelTable
  readonly start: Format.TableStart
  readonly index: number
  readonly perInsert: number
  rows: number
  batch: Array<ReadonlyArray<unknown>>
}

/** The engine's own words for a failed statement (the driver's message), without the driver's wrapping. */
const engineMessage = (error: SqlError) => {
  const cause = (error.cause as { message?: unknown } | undefined)?.message
  return typeof cause === "string" && cause !== "" ? cause : error.message
}

/**
 * Fills Keel's tables from the lines after an export file's header, in the caller's transaction: each table's
 * line checked against this database's (known, not twice, after the tables it references, the same columns),
 * rows decoded and inserted many to a statement, counts checked against the table lines and the last line.
 */
export const makeLoader = (deps: { readonly sql: SqlClient.SqlClient; readonly dialect: SqlDialectShape }) => {
  const { dialect, sql } = deps

  const insertBatch = (filling: Filling) =>
    Effect.suspend(() => {
      const { batch, start } = filling
      if (batch.length === 0) return Effect.void
      filling.batch = []
      const row = `(${start.columns.map(() => "?").join(", ")})`
      const text = `INSERT INTO ${quote(start.table)} (${start.columns.map((c) => quote(c.name)).join(", ")}) VALUES ${Array.from(batch, () => row).join(", ")}`
      return sql.unsafe(dialect.text(text), batch.flat()).pipe(
        Effect.asVoid,
        Effect.catchTag("SqlError", (error) =>
          Effect.fail(
            new ImportFailed({
              code: "IMPORT_FAILED",
              detail: `the database refused a row of ${start.table}: ${engineMessage(error)} (nothing was imported)`
            })
          )
        )
      )
    })

  const progress = (filling: Filling, tables: number, options: TransferOptions) =>
    options.onProgress === undefined
      ? Effect.void
      : options.onProgress({
          table: filling.start.table,
          done: filling.rows,
          total: filling.start.rows,
          index: filling.index,
          tables
        })

  const begin = (
    ref: Reference,
    seen: Set<string>,
    start: Format.TableStart,
    invalid: (why: string) => ExportFileInvalid
  ) =>
    Effect.gen(function* () {
      const table = ref.tables.find((t) => t.name === start.table)
      if (table === undefined) return yield* invalid(`${start.table} is not one of this Keel's tables`)
      if (seen.has(table.name)) return yield* invalid(`${table.name} appears twice`)
      const parent = table.parents.find((p) => p !== table.name && !seen.has(p))
      if (parent !== undefined) return yield* invalid(`${table.name} comes before ${parent}, which it references`)
      const columns = (cs: ReadonlyArray<Format.Column>) =>
        cs
          .map((c) => `${c.name} ${c.type}`)
          .sort()
          .join(", ")
      if (columns(start.columns) !== columns(table.columns))
        return yield* invalid(
          `${table.name} has the columns ${columns(start.columns)}; this database's has ${columns(table.columns)}`
        )
      seen.add(table.name)
      // Rows a migration wrote (the emptiness check let only those through) give way to the file's.
      if (table.seeded.length > 0) yield* Effect.orDie(sql.unsafe(`DELETE FROM ${quote(table.name)}`))
      const perInsert = Math.max(1, Math.min(500, Math.floor(16_000 / Math.max(1, start.columns.length))))
      return { table, start, index: seen.size, perInsert, rows: 0, batch: [] } satisfies Filling
    })

  /** Takes one row; true when it sent the rows gathered so far (progress to show). */
  const add = (
    filling: Filling,
    values: ReadonlyArray<unknown>,
    invalid: (why: string) => ExportFileInvalid
  ): Effect.Effect<boolean, ExportFileInvalid | ImportFailed> =>
    Effect.suspend((): Effect.Effect<boolean, ExportFileInvalid | ImportFailed> => {
      if (filling.rows === filling.start.rows)
        return Effect.fail(invalid(`${filling.start.table} declares ${filling.start.rows} rows but more follow`))
      try {
        filling.batch.push(Format.decodeRow(filling.start.columns, values))
      } catch (misfit) {
        return Effect.fail(
          invalid(`${filling.start.table}: ${misfit instanceof Error ? misfit.message : String(misfit)}`)
        )
      }
      filling.rows++
      return filling.batch.length >= filling.perInsert ? Effect.as(insertBatch(filling), true) : Effect.succeed(false)
    })

  const end = (filling: Filling, invalid: (why: string) => ExportFileInvalid) =>
    Effect.gen(function* () {
      yield* insertBatch(filling)
      if (filling.rows !== filling.start.rows)
        return yield* invalid(`${filling.start.table} declares ${filling.start.rows} rows but ${filling.rows} follow`)
      return { table: filling.start.table, rows: filling.rows } satisfies TableCount
    })

  const finish = (
    ref: Reference,
    loaded: ReadonlyArray<TableCount>,
    trailer: Format.Trailer,
    source: LineSource,
    invalid: (why: string) => ExportFileInvalid
  ) =>
    Effect.gen(function* () {
      const missing = ref.tables.filter((t) => !loaded.some((l) => l.table === t.name)).map((t) => t.name)
      if (missing.length > 0) return yield* invalid(`the file has no ${missing.join(", ")}`)
      const rows = loaded.reduce((n, t) => n + t.rows, 0)
      if (trailer.tables !== loaded.length || trailer.rows !== rows)
        return yield* invalid(
          `the last line counts ${trailer.tables} tables and ${trailer.rows} rows; the file holds ${loaded.length} and ${rows}`
        )
      if ((yield* source.next) !== undefined) return yield* invalid("a line follows the last line")
    })

  /** Reads the rest of the file (after its header) into the database; the caller's transaction holds it all. */
  const load = (ref: Reference, source: LineSource, file: string, options: TransferOptions) =>
    Effect.gen(function* () {
      const invalid = (why: string) =>
        new ExportFileInvalid({
          code: "EXPORT_FILE_INVALID",
          detail: `${shownPath(file)}, line ${source.lineNumber()}: ${why}`
        })
      const seen = new Set<string>()
      const loaded: Array<TableCount> = []
      let filling: Filling | undefined
      for (;;) {
        const text = yield* source.next
        if (text === undefined) return yield* invalid("the file ends before its last line: it was cut short")
        const parsed = Format.parseLine(text)
        if (Either.isLeft(parsed)) return yield* invalid(parsed.left)
        const line = parsed.right
        if (line.kind === "row") {
          if (filling === undefined) return yield* invalid("a row before any table line")
          if (yield* add(filling, line.values, invalid)) yield* progress(filling, ref.tables.length, options)
          continue
        }
        if (filling !== undefined) {
          loaded.push(yield* end(filling, invalid))
          yield* progress(filling, ref.tables.length, options)
          filling = undefined
        }
        if (line.kind === "table") filling = yield* begin(ref, seen, line.table, invalid)
        else {
          yield* finish(ref, loaded, line.trailer, source, invalid)
          return loaded
        }
      }
    })

  return { load } as const
}
