// keel.mjs with every better-sqlite3 statement counted and timed by its SQL text (diagnostics, not a
// figure to report): `BENCH_KEEL_SERVER=keel-sqlcount.mjs node bench/market.mjs` writes, when the server
// stops, [sql, executions, total µs, executions over 1 ms, their µs] sorted by total time to
// BENCH_SQLCOUNT_OUT (default /tmp/keel-sqlcount.json).
import * as fs from "node:fs"
import Database from "better-sqlite3"

const stats = new Map()
const prepare = Database.prototype.prepare
Database.prototype.prepare = function (sql) {
  const statement = prepare.call(this, sql)
  for (const method of ["run", "all", "get"]) {
    const original = statement[method].bind(statement)
    statement[method] = (...params) => {
      const t0 = process.hrtime.bigint()
      try {
        return original(...params)
      } finally {
        const took = process.hrtime.bigint() - t0
        const s = stats.get(sql) ?? { n: 0, ns: 0n, slow: 0, slowNs: 0n }
        s.n++
        s.ns += took
        if (took > 1_000_000n) {
          s.slow++
          s.slowNs += took
        }
        stats.set(sql, s)
      }
    }
  }
  return statement
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
  fs.writeFileSync(process.env.BENCH_SQLCOUNT_OUT ?? "/tmp/keel-sqlcount.json", JSON.stringify(rows, null, 1))
})
process.on("SIGTERM", () => process.exit(0))
await import("./keel.mjs")
