import { describe, expect, it } from "vitest"
import { numberPlaceholders, pg, sqlite } from "../../src/services/platform/sql/SqlDialect.js"

describe("SqlDialect", () => {
  it("numbers ? placeholders for PostgreSQL, leaving literals, quoted identifiers and comments alone", () => {
    expect(numberPlaceholders("SELECT a FROM t WHERE b = ? AND c IN (?, ?)")).toBe(
      "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"
    )
    expect(numberPlaceholders(`SELECT 'why?', "odd?col", 'it''s ?' FROM t WHERE x = ? -- and ?\nAND y = ?`)).toBe(
      `SELECT 'why?', "odd?col", 'it''s ?' FROM t WHERE x = $1 -- and ?\nAND y = $2`
    )
  })

  it("keeps SQLite's text as written and its write lock up front", () => {
    expect(sqlite.text("SELECT ? AS x")).toBe("SELECT ? AS x")
    expect(sqlite.beginWrite).toBe("BEGIN IMMEDIATE")
    expect(pg.beginWrite).toBe("BEGIN")
  })

  it("classifies what a retry can cure and what a unique key refused", () => {
    const pgError = (code: string) => ({ _tag: "SqlError", cause: Object.assign(new Error("pg"), { code }) })
    expect(pg.retryable(pgError("40001"))).toBe(true)
    expect(pg.retryable(pgError("40P01"))).toBe(true)
    expect(pg.retryable(pgError("55P03"))).toBe(true)
    expect(pg.retryable(pgError("23505"))).toBe(false)
    expect(pg.uniqueViolation(pgError("23505"))).toBe(true)
    const sqliteError = (code: string) => ({ cause: Object.assign(new Error("sqlite"), { code }) })
    expect(sqlite.retryable(sqliteError("SQLITE_BUSY_SNAPSHOT"))).toBe(true)
    expect(sqlite.uniqueViolation(sqliteError("SQLITE_CONSTRAINT_PRIMARYKEY"))).toBe(true)
    expect(sqlite.uniqueViolation(sqliteError("SQLITE_CONSTRAINT_NOTNULL"))).toBe(false)
  })
})
