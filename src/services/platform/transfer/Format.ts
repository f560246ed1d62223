import { Either, Schema } from "effect"

/**
 * The export file (docs/database.md, "Moving an installation"): NDJSON, one JSON value a line, UTF-8.
 *
 *   {"format":"keel-export","version":1,…}             the header: who wrote it, from which engine, at which migrations
 *   {"table":"ledger_entries","rows":30,"columns":[…]}  a table: its row count and columns (name and type)
 *   [1,"mint","demo wallet",1764300000000]              one line per row: its values in the columns' order
 *   {"end":true,"tables":47,"rows":7345}                the last line: a file without it was cut short
 *
 * A value is JSON by its column's type: `integer` a number, or a decimal string past ±(2^53 − 1), which a JSON
 * number cannot hold exactly; `real` a number; `text` a string; `bytes` a base64 string; NULL `null`.
 */
export const FORMAT = "keel-export"
export const FORMAT_VERSION = 1

export const ColumnType = Schema.Literal("integer", "real", "text", "bytes")
export type ColumnType = typeof ColumnType.Type

export const Column = Schema.Struct({ name: Schema.String, type: ColumnType })
export type Column = typeof Column.Type

export const AppliedMigrations = Schema.Record({
  key: Schema.String,
  value: Schema.Array(Schema.Struct({ id: Schema.Int, name: Schema.String }))
})
export type AppliedMigrations = typeof AppliedMigrations.Type

export const SkippedTable = Schema.Struct({ table: Schema.String, reason: Schema.String })
export type SkippedTable = typeof SkippedTable.Type

export const Header = Schema.Struct({
  format: Schema.Literal(FORMAT),
  version: Schema.Int,
  keel: Schema.String,
  exported_at: Schema.String,
  engine: Schema.Literal("sqlite", "postgresql"),
  migrations: AppliedMigrations,
  skipped: Schema.Array(SkippedTable)
})
export type Header = typeof Header.Type

export const TableStart = Schema.Struct({
  table: Schema.String,
  rows: Schema.NonNegativeInt,
  columns: Schema.Array(Column)
})
export type TableStart = typeof TableStart.Type

export const Trailer = Schema.Struct({
  end: Schema.Literal(true),
  tables: Schema.NonNegativeInt,
  rows: Schema.NonNegativeInt
})
export type Trailer = typeof Trailer.Type

/** A value that does not fit its column's type; the caller says where it was. */
export class ValueMisfit extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

const describe = (value: unknown) =>
  value instanceof Uint8Array
    ? `${value.byteLength} bytes`
    : `${typeof value} ${JSON.stringify(String(value)).slice(0, 40)}`

const INTEGER_TEXT = /^-?(0|[1-9][0-9]{0,19})$/

/** An integer as JSON: a number while it is exact as one, else its decimal digits. */
const integerJson = (n: bigint): number | string =>
  n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(n) : n.toString()

/**
 * A value as read from either engine (SQLite with safe integers: `bigint`; PostgreSQL's int8 as a string, bytea as
 * a Buffer) to its JSON form; a misfit throws `ValueMisfit`.
 */
export const encodeValue = (type: ColumnType, value: unknown): unknown => {
  if (value === null || value === undefined) return null
  switch (type) {
    case "integer":
      if (typeof value === "bigint") return integerJson(value)
      if (typeof value === "number" && Number.isSafeInteger(value)) return value
      if (typeof value === "string" && INTEGER_TEXT.test(value)) return integerJson(BigInt(value))
      break
    case "real":
      if (typeof value === "number" && Number.isFinite(value)) return value
      if (typeof value === "bigint") return Number(value)
      break
    case "text":
      if (typeof value === "string") return value
      break
    case "bytes":
      if (value instanceof Uint8Array)
        return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64")
      break
  }
  throw new ValueMisfit(`holds ${describe(value)} where ${type === "integer" ? "an" : "a"} ${type} value belongs`)
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** A value of the file to what the engines bind (`bigint`, number, string, Buffer, null); a misfit throws. */
export const decodeValue = (type: ColumnType, value: unknown): unknown => {
  if (value === null) return null
  switch (type) {
    case "integer":
      if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value)
      if (typeof value === "string" && INTEGER_TEXT.test(value)) return BigInt(value)
      break
    case "real":
      if (typeof value === "number") return value
      break
    case "text":
      if (typeof value === "string") return value
      break
    case "bytes":
      if (typeof value === "string" && BASE64.test(value)) return Buffer.from(value, "base64")
      break
  }
  throw new ValueMisfit(
    `${JSON.stringify(value)?.slice(0, 40)} is not ${type === "integer" ? "an" : "a"} ${type} value`
  )
}

/** A row's values in its columns' order, each to JSON; throws `ValueMisfit` naming the column. */
export const encodeRow = (columns: ReadonlyArray<Column>, values: ReadonlyArray<unknown>) =>
  columns.map((column, i) => {
    try {
      return encodeValue(column.type, values[i])
    } catch (misfit) {
      if (misfit instanceof ValueMisfit) throw new ValueMisfit(`column ${column.name} ${misfit.reason}`)
      throw misfit
    }
  })

/** A row line of the file to bindable values; throws `ValueMisfit` naming the column. */
export const decodeRow = (columns: ReadonlyArray<Column>, line: unknown) => {
  if (!Array.isArray(line) || line.length !== columns.length)
    throw new ValueMisfit(`a row of ${columns.length} values was expected`)
  return columns.map((column, i) => {
    try {
      return decodeValue(column.type, line[i])
    } catch (misfit) {
      if (misfit instanceof ValueMisfit) throw new ValueMisfit(`column ${column.name}: ${misfit.reason}`)
      throw misfit
    }
  })
}

/** One line of the file, parsed: a row (an array) or one of the objects, told apart by their keys. */
export type Line =
  | { readonly kind: "row"; readonly values: ReadonlyArray<unknown> }
  | { readonly kind: "table"; readonly table: TableStart }
  | { readonly kind: "end"; readonly trailer: Trailer }

const decodeTable = Schema.decodeUnknownEither(TableStart)
const decodeTrailer = Schema.decodeUnknownEither(Trailer)

/** A line after the header; an unreadable one is `Left` with the reason. */
export const parseLine = (text: string): Either.Either<Line, string> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Either.left("not JSON")
  }
  if (Array.isArray(value)) return Either.right({ kind: "row", values: value })
  if (typeof value === "object" && value !== null && "table" in value)
    return Either.mapBoth(decodeTable(value), {
      onLeft: () => "a table line needs table, rows and columns ({name, type})",
      onRight: (table) => ({ kind: "table", table })
    })
  if (typeof value === "object" && value !== null && "end" in value)
    return Either.mapBoth(decodeTrailer(value), {
      onLeft: () => "the last line needs end, tables and rows",
      onRight: (trailer) => ({ kind: "end", trailer })
    })
  return Either.left("neither a row, a table nor the last line")
}

const decodeHeader = Schema.decodeUnknownEither(Header)

/** The first line; `Left` says why it is not a header this Keel reads. */
export const parseHeader = (text: string | undefined): Either.Either<Header, string> => {
  if (text === undefined) return Either.left("the file is empty")
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Either.left("its first line is not JSON: not a Keel export (ctl db export)")
  }
  const format = (value as { format?: unknown } | null)?.format
  const version = (value as { version?: unknown } | null)?.version
  if (format !== FORMAT) return Either.left("its first line is not a Keel export header (ctl db export)")
  if (version !== FORMAT_VERSION)
    return Either.left(
      `it is format version ${String(version)}; this Keel reads version ${FORMAT_VERSION} (import with the Keel that exported it, or a newer one)`
    )
  return Either.mapLeft(decodeHeader(value), () => "its header lacks keel, exported_at, engine, migrations or skipped")
}
