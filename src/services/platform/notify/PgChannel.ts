/**
 * The PostgreSQL channel of a Keel channel in a schema, as an SQL text expression: `<channel>@<schema>`, or
 * `<channel>@<md5 of the schema>` when that would not fit PostgreSQL's 63 bytes. Tests run many schemas in one
 * database, and deployments may share one: the schema keeps their notifications apart. `channel` and `schema` are
 * SQL expressions (a quoted literal, `$1::text`, `current_schema()`, a trigger's `TG_TABLE_SCHEMA`). Migration
 * market/0006 writes this expression out for the API keys' channel: the scheme never changes.
 */
export const pgChannelName = (channel: string, schema = "current_schema()") =>
  `(CASE WHEN octet_length(${channel} || '@' || ${schema}) <= 63 THEN ${channel} || '@' || ${schema} ` +
  `ELSE ${channel} || '@' || md5(${schema}) END)`

/**
 * The statement that publishes `channel` (a constant of `[a-z0-9_]`) in this schema when the transaction it runs in
 * commits: for statement programs, which cannot hold the Notifier (`MarketEvents.appendEvent`).
 */
export const pgNotifyAtCommit = (channel: string) => `pg_notify(${pgChannelName(`'${channel}'`)}, '')`
