import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { assert } from "vitest"
import { testDatabaseUrl, urlInSchema } from "./pg-schema.js"
import { ctlBin, runCtl, startServer } from "./server.js"

/** One statement on a connection of its own to the test database (schemas are named in the statement). */
export const admin = async (statement: string, params: ReadonlyArray<unknown> = []) => {
  const client = new pg.Client({ connectionString: testDatabaseUrl, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    return (await client.query(statement, params as Array<unknown>)).rows as Array<Record<string, unknown>>
  } finally {
    await client.end()
  }
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })

/** Polls `check` every 100 ms until it holds: a bound on a hang (90 s by default), not a timing claim. */
export const waitFor = async (what: string, check: () => Promise<boolean>, limitMs = 90_000) => {
  const until = Date.now() + limitMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * A fresh schema for `ctl serve` runners (docs/cluster.md), dropped by `dropAll`; `ctl` for set-up commands on it,
 * and `runner(i)` to start the i-th runner (its own data dir and runner port) with `extra` settings.
 */
export const runnersFixture = async (
  children: Array<ChildProcess>,
  schemas: Array<string>,
  extra: Record<string, string> = {}
) => {
  const schema = `keel_t_runners_${randomBytes(4).toString("hex")}`
  await admin(`CREATE SCHEMA ${schema}`)
  schemas.push(schema)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runners-"))
  const shared = {
    KEEL_DATABASE_URL: urlInSchema(testDatabaseUrl, schema),
    KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
    KEEL_OBJECT_STORE: "sql",
    KEEL_DEMO_DATA: "false",
    MARKET_RATE_LIMIT_TRADING: "1000000",
    KEEL_CLUSTER_SHARDS: "30",
    ...extra
  }
  const ctl = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const run = await runCtl([...args, "--json"], {
      ...process.env,
      ...shared,
      KEEL_DATA_DIR: path.join(dir, "setup"),
      ...env
    })
    assert.strictEqual(run.code, 0, `ctl ${args.join(" ")}: ${run.stderr}`)
    return JSON.parse(run.stdout)
  }
  const runnerPorts: Array<number> = []
  /**
   * `surfaces`: the HTTP surfaces it serves (the marketplace unless told); every runner hosts every actor. `env`: this
   * runner's own settings over the shared ones (e.g. its TLS certificate).
   */
  const runner = async (
    i: number,
    surfaces: ReadonlyArray<string> = ["marketplace"],
    env: Record<string, string> = {}
  ) => {
    runnerPorts[i] ??= await freePort()
    return startServer(
      [ctlBin, "serve", ...surfaces.flatMap((surface) => ["--surface", surface]), "--port", "0"],
      {
        ...shared,
        KEEL_DATA_DIR: path.join(dir, `runner-${i}`),
        KEEL_CLUSTER_MODE: "runners",
        KEEL_RUNNER_ADDRESS: `127.0.0.1:${runnerPorts[i]}`,
        ...env
      },
      children
    )
  }
  /** Addresses holding a live shard lock. */
  const holders = async () =>
    new Set(
      (await admin(`SELECT DISTINCT address FROM ${schema}.cluster_locks WHERE address IS NOT NULL`)).map((row) =>
        String(row.address)
      )
    )
  return { schema, dir, shared, ctl, runner, runnerPorts, holders }
}
