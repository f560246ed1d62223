/**
 * The first `code` on a failure's cause chain (a few levels: SqlError → driver error) that `matches`: the engines
 * put their own result code there (SQLite's `SQLITE_*` names, PostgreSQL's five-character SQLSTATE).
 */
export const engineCode = (error: unknown, matches: (code: string) => boolean): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && matches(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** The SQLite result code behind a failure (`SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`, …), when there is one. */
export const sqliteCode = (error: unknown): string | undefined =>
  engineCode(error, (code) => code.startsWith("SQLITE_"))

/** Another process holds the lock (or moved the snapshot): worth trying again shortly. */
export const isSqliteBusy = (error: unknown) => {
  const code = sqliteCode(error)
  return code !== undefined && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
}
