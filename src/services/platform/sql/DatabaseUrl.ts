/**
 * `KEEL_DATABASE_URL` as it may be shown: in `ctl db status`, in a `DATABASE_UNAVAILABLE` line, in logs. The
 * password (in the authority or as a `password`/`sslpassword` parameter) becomes `***`; a URL that does not parse
 * is not shown at all, since where its password sits cannot be told.
 */
export const redactDatabaseUrl = (url: string, setting = "KEEL_DATABASE_URL"): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `(${setting}, not shown: it does not parse as a URL)`
  }
  if (parsed.password !== "") parsed.password = "***"
  for (const key of [...parsed.searchParams.keys()]) if (/pass/i.test(key)) parsed.searchParams.set(key, "***")
  return parsed.toString()
}

/**
 * The URL with `-c search_path=<schema>` added to the connection's startup `options` (node-postgres reads the
 * parameter from the URL): every connection of a pool made from it resolves unqualified names in `schema` first.
 */
export const withSearchPath = (url: string, schema: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`not a plain schema name: ${schema}`)
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  const own = `-c search_path=${schema}`
  parsed.searchParams.set("options", options === null || options === "" ? own : `${options} ${own}`)
  return parsed.toString()
}

/**
 * One line saying why a connection failed, from the innermost error that says something. node-postgres rejects
 * with an `AggregateError` and no message when every address of a host name refused (`localhost`: ::1 and
 * 127.0.0.1); its errors carry the reason.
 */
export const failureReason = (error: unknown): string => {
  const reasons: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth++) {
    const { message, errors, cause } = current as { message?: unknown; errors?: unknown; cause?: unknown }
    if (Array.isArray(errors) && errors.length > 0)
      return [...new Set(errors.map((inner) => failureReason(inner)))].join("; ")
    if (typeof message === "string" && message !== "") reasons.push(message)
    current = cause
  }
  return reasons.at(-1) ?? String(error)
}
