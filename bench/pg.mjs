// The benches' PostgreSQL side: which engines a run measures (`--engine sqlite|postgres|both`), a database of its
// own for each server a run starts (created before, dropped after), and the CPU time of the PostgreSQL backends
// that serve one server process (a server's database work happens in those processes, not in its own).
//
// A database, not a schema: Keel's actor runtime (@effect/cluster) holds its shards as session advisory locks
// whose numbers do not depend on the schema, so a Keel server in one schema waits, its trades with it, for as long
// as another Keel process on another schema of the same database holds them (tests of other work, another run).
//
// The server is BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test, PostgreSQL's own trust
// setup here). The URL may carry a password: it is printed only without it, and reaches a child only through its
// environment (Keel's KEEL_DATABASE_URL, the raw baselines' BENCH_DATABASE_URL), never its arguments.
import * as fs from "node:fs"
import pg from "pg"

export const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
/** The pool both PostgreSQL servers open at most: Keel's KEEL_DATABASE_POOL (default 10), the baseline the same. */
export const POOL = Number(process.env.KEEL_DATABASE_POOL ?? 10)
const CONNECT_TIMEOUT_MS = 3_000

/** The URL without its password. */
export const redacted = (url) => {
  try {
    const u = new URL(url)
    if (u.password !== "") u.password = "***"
    for (const name of ["password", "sslpassword"]) if (u.searchParams.has(name)) u.searchParams.set(name, "***")
    return u.toString()
  } catch {
    return "(a URL that does not parse)"
  }
}

/** `url` with its database replaced by `database`. */
const onDatabase = (url, database) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

const client = async (url) => {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  c.on("error", () => {}) // a connection the server ends while idle: the next query says so
  await c.connect()
  return c
}

/** The server's version when a PostgreSQL answers at `url` within 3 s, else undefined with why. */
const probe = async (url) => {
  let c
  try {
    c = await client(url)
    const { rows } = await c.query("SHOW server_version")
    return { version: rows[0].server_version }
  } catch (e) {
    return { why: e instanceof Error ? e.message : String(e) }
  } finally {
    await c?.end().catch(() => {})
  }
}

/**
 * The engines this run measures, from `--engine sqlite|postgres|both` (or `--engine=…`). Without it: both when a
 * PostgreSQL answers, SQLite alone (saying so) when none does. `--engine postgres|both` without a server fails.
 */
export const enginesOf = async (argv = process.argv.slice(2)) => {
  const at = argv.findIndex((a) => a === "--engine" || a.startsWith("--engine="))
  const asked = at < 0 ? undefined : argv[at].includes("=") ? argv[at].split("=")[1] : argv[at + 1]
  if (asked !== undefined && !["sqlite", "postgres", "both"].includes(asked)) {
    console.error(`--engine must be sqlite, postgres or both (got ${asked})`)
    process.exit(2)
  }
  if (asked === "sqlite") return { engines: ["sqlite"], note: "engine: SQLite (--engine sqlite)" }
  const server = await probe(DATABASE_URL)
  if (server.version === undefined) {
    if (asked !== undefined) {
      console.error(`--engine ${asked}: no PostgreSQL answers at ${redacted(DATABASE_URL)}: ${server.why}`)
      process.exit(2)
    }
    return {
      engines: ["sqlite"],
      note: `engine: SQLite only: no PostgreSQL answers at ${redacted(DATABASE_URL)} (${server.why}; set BENCH_DATABASE_URL)`
    }
  }
  const pgNote = `PostgreSQL ${server.version} at ${redacted(DATABASE_URL)}, pool ${POOL} connections on each side`
  return asked === "postgres"
    ? { engines: ["postgres"], note: `engine: ${pgNote}` }
    : { engines: ["sqlite", "postgres"], note: `engines: SQLite and ${pgNote}` }
}

let databases = 0
const live = new Set()

/**
 * Runs `body(url)` with a fresh database of its own (`keel_bench_<pid>_<n>_<label>`, the server's defaults) that
 * `url` names; drops it afterwards, whatever `body` did. The caller stops its servers inside `body`.
 */
export const withDatabase = async (label, body) => {
  const database = `keel_bench_${process.pid}_${++databases}_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}`
  const admin = await client(DATABASE_URL)
  try {
    await admin.query(`CREATE DATABASE ${database}`)
  } finally {
    await admin.end()
  }
  if (live.size === 0) process.once("SIGINT", dropAllAndExit)
  live.add(database)
  try {
    return await body(onDatabase(DATABASE_URL, database))
  } finally {
    await dropDatabase(database)
  }
}

/** Drops `database`, ending any session still on it (a server that was killed: its backend may linger a moment). */
const dropDatabase = async (database) => {
  const admin = await client(DATABASE_URL)
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    live.delete(database)
    if (live.size === 0) process.removeListener("SIGINT", dropAllAndExit)
  } finally {
    await admin.end()
  }
}

/** Interrupted (Ctrl-C) while databases are live: they are dropped before it exits (its servers die with it). */
const dropAllAndExit = () => {
  Promise.allSettled([...live].map(dropDatabase)).finally(() => process.exit(130))
}

const TICKS_PER_SECOND = 100 // USER_HZ on Linux

/** The local ports of `pid`'s TCP connections to `port` (IPv4 and IPv6 loopback), from /proc. */
const localPortsTo = (pid, port) => {
  const inodes = new Set()
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m !== null) inodes.add(m[1])
    } catch {}
  }
  const ports = []
  const remote = port.toString(16).toUpperCase().padStart(4, "0")
  for (const table of ["tcp", "tcp6"]) {
    let text = ""
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, "utf8")
    } catch {}
    for (const row of text.split("\n").slice(1)) {
      const f = row.trim().split(/\s+/)
      if (f.length < 10 || !inodes.has(f[9])) continue
      if (f[2].split(":")[1] === remote) ports.push(Number.parseInt(f[1].split(":")[1], 16))
    }
  }
  return ports
}

const cpuOf = (pid) => {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/**
 * The CPU seconds used so far by the PostgreSQL backends of `serverPid`'s connections (matched by client port in
 * pg_stat_activity); undefined where /proc or the server's processes cannot be read (another machine).
 */
const backends = async (serverPid) => {
  const port = Number(new URL(DATABASE_URL).port || 5432)
  const ports = localPortsTo(serverPid, port)
  if (ports.length === 0) return undefined
  const c = await client(DATABASE_URL)
  try {
    const { rows } = await c.query("SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])", [ports])
    const cpu = new Map()
    for (const { pid } of rows) {
      const seconds = cpuOf(pid)
      if (seconds !== undefined) cpu.set(pid, seconds)
    }
    return cpu.size === 0 ? undefined : cpu
  } finally {
    await c.end()
  }
}

/**
 * The database's CPU seconds spent for `serverPid` while `measured` ran: the backends it had before and any it
 * opened meanwhile (a backend closed meanwhile is lost: the pools keep theirs open under load).
 */
export const withBackendCpu = async (serverPid, measured) => {
  const before = await backends(serverPid).catch(() => undefined)
  const result = await measured()
  const after = await backends(serverPid).catch(() => undefined)
  if (before === undefined || after === undefined) return { result, seconds: undefined }
  let seconds = 0
  for (const [pid, cpu] of after) seconds += cpu - (before.get(pid) ?? 0)
  return { result, seconds }
}
