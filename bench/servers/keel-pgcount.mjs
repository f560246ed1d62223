// keel.mjs on PostgreSQL with every statement node-postgres sends counted and timed (from the call to its answer,
// so a statement waiting for a row lock shows as slow) by its SQL text (diagnostics, not a figure to report):
// `BENCH_KEEL_SERVER=keel-pgcount.mjs node bench/market.mjs --engine postgres` writes, when the server stops,
// [sql, executions, total µs, executions over 1 ms, their µs] sorted by total time to BENCH_PGCOUNT_OUT (default
// /tmp/keel-pgcount.json).
import * as fs from "node:fs"
import pg from "pg"

const stats = new Map()
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, values, callback) {
  const text = typeof config === "string" ? config : config?.text
  if (typeof text !== "string" || typeof callback !== "function") return query.call(this, config, values, callback)
  const t0 = process.hrtime.bigint()
  return query.call(this, config, values, (err, result) => {
    const took = process.hrtime.bigint() - t0
    const s = stats.get(text) ?? { n: 0, ns: 0n, slow: 0, slowNs: 0n }
    s.n++
    s.ns += took
    if (took > 1_000_000n) {
      s.slow++
      s.slowNs += took
    }
    stats.set(text, s)
    callback(err, result)
  })
}
process.on("exit", () => {
  const rows = [...stats].map(([sql, s]) => [
    sql.replace(/\s+/g, " ").trim().slice(0, 160),
    s.n,
    Number(s.ns / 1000n),
    s.slow,
    Number(s.slowNs / 1000n)
  ])
  rows.sort((a, b) => b[2] - a[2])
  fs.writeFileSync(process.env.BENCH_PGCOUNT_OUT ?? "/tmp/keel-pgcount.json", JSON.stringify(rows, null, 1))
})
process.on("SIGTERM", () => process.exit(0))
await import("./keel.mjs")
