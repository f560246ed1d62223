// What both PostgreSQL baselines share: the pool (BENCH_DATABASE_URL, the run's own database, at
// most BENCH_PG_POOL connections: Keel's KEEL_DATABASE_POOL), numbered VALUES lists, and BEGIN … COMMIT.
import pg from "pg"

pg.types.setTypeParser(20, BigInt) // int8 as bigint, as Keel's statement programs read it
export const pool = new pg.Pool({
  connectionString: process.env.BENCH_DATABASE_URL,
  max: Number(process.env.BENCH_PG_POOL)
})
pool.on("error", () => {}) // an idle connection the server ended: the pool replaces it

const texts = new Map()
/** `($1, $2, $3), ($4, $5, $6)` for `rows` rows of `columns` values: a multi-row insert's VALUES list. */
export const values = (columns, rows) => {
  const key = `${columns}x${rows}`
  let text = texts.get(key)
  if (text === undefined) {
    let n = 0
    const row = () => `(${Array.from({ length: columns }, () => `$${++n}`).join(", ")})`
    text = Array.from({ length: rows }, row).join(", ")
    texts.set(key, text)
  }
  return text
}

/** Deadlock, serialization failure, lock not available: what Keel's statement-program driver runs again. */
const RETRYABLE = new Set(["40001", "40P01", "55P03"])

/**
 * `body(c)` in BEGIN … COMMIT on a pooled connection, rolled back on any failure; a retryable failure runs it
 * again from its start, `tries` times in all.
 */
export const transaction = async (body, tries = 1) => {
  const c = await pool.connect()
  try {
    for (let attempt = 1; ; attempt++) {
      await c.query("BEGIN")
      try {
        const result = await body(c)
        await c.query("COMMIT")
        return result
      } catch (e) {
        await c.query("ROLLBACK")
        if (!(RETRYABLE.has(e?.code) && attempt < tries)) throw e
      }
    }
  } finally {
    c.release()
  }
}
