import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { testWallet } from "../support/market.js"
import { postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"
import { requestChild, runCtl } from "../support/server.js"

// Runners mode (issue 45, first part): two `ctl serve` processes (the built package: `npm run build` first) on one
// PostgreSQL schema share the actors' shards; a trade sent to either HTTP port reaches its ticker's actor wherever it
// lives; one runner SIGKILLed, the other takes its shards and answers every ticker. Bounded: every wait has a limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

const TICKERS = ["RUNA", "RUNB", "RUNC", "RUND", "RUNE", "RUNF"]

describe.skipIf(postgresSkipReason !== undefined)("ctl serve runners on one PostgreSQL schema", () => {
  it("shards spread over two runners; both HTTP ports trade every ticker; a SIGKILLed runner's tickers move", async () => {
    // The market's schedule, a cluster singleton, samples the coin's price every 400 ms on one runner only.
    const { schema, ctl, runner, runnerPorts, holders } = await runnersFixture(children, schemas, {
      MARKET_PRICE_SAMPLE_INTERVAL: "400 millis"
    })
    for (const ticker of TICKERS) await ctl(["market", "agent", "create", "--ticker", ticker, "--name", ticker])
    const wallet = testWallet(4501)
    const key = (await ctl(["market", "keys", "create", "--wallet", wallet.address])).api_key as string
    await ctl(["market", "coin", "mint", "--to", wallet.address, "--amount", "1000", "--reason", "runners test"])

    const servers = await Promise.all([runner(0), runner(1)])
    // What each runner would not share with the others is said at start (docs/cluster.md, "What is and is not
    // shared"): its own registry file, its own rate-limit counters.
    await waitFor("the start-up warnings", async () =>
      servers.every(
        (server) =>
          server.logs().includes("runners mode without KEEL_REGISTRY") &&
          server.logs().includes("rate limits are this runner's own")
      )
    )

    // Both runners hold shards (the hash ring over the two): their rows in the schema's cluster_locks.
    await waitFor("shards on both runners", async () => (await holders()).size === 2)
    // `ctl cluster status` from a third process (no runner itself) shows the two, their shards, the tickers on each.
    const status = async () =>
      (await ctl(["cluster", "status"], { KEEL_CLUSTER_MODE: "runners" })) as {
        readonly runners: ReadonlyArray<{
          address: string
          alive: boolean
          healthy: boolean
          shards: number
          entities: Record<string, number>
        }>
        readonly unassigned_shards: number
        readonly entities: Record<string, number>
      }
    await waitFor("every shard held", async () => (await status()).unassigned_shards === 0)
    const both = await status()
    assert.deepStrictEqual(
      both.runners.map((r) => r.address).sort(),
      runnerPorts.map((port) => `127.0.0.1:${port}`).sort()
    )
    assert.isTrue(both.runners.every((r) => r.alive && r.shards > 0))
    assert.strictEqual(
      both.runners.reduce((sum, r) => sum + r.shards, 0),
      30
    )
    assert.strictEqual(
      both.runners.reduce((sum, r) => sum + (r.entities.MarketAgent ?? 0), 0),
      TICKERS.length
    )

    // The singleton schedule: with two runners up, one sampler. Its samples are spaced by its interval (a sample,
    // then a 400 ms wait); a second sampler, in any phase, would put two samples less than 200 ms apart.
    const samplesFrom = Date.now()
    await waitFor("eight price samples with both runners up", async () => {
      const rows = await admin(`SELECT count(*) AS n FROM ${schema}.market_coin_prices WHERE at >= $1`, [samplesFrom])
      return Number(rows[0]!.n) >= 8
    })
    const sampled = (
      await admin(`SELECT at FROM ${schema}.market_coin_prices WHERE at >= $1 ORDER BY at`, [samplesFrom])
    ).map((row) => Number(row.at))
    const gaps = sampled.slice(1).map((at, i) => at - sampled[i]!)
    assert.isTrue(
      gaps.every((gap) => gap >= 200),
      `samples closer than half the interval: ${gaps.join(", ")}`
    )
    assert.strictEqual((await holders()).size, 2, "both runners still hold shards")

    const buy = (port: number, ticker: string) =>
      requestChild(port, {
        method: "POST",
        path: `/api/tokens/${ticker}/buy`,
        headers: { authorization: `Bearer ${key}` },
        body: { user_id: wallet.address, amount: 0.5 }
      })
    let answered = 0
    for (const server of servers)
      for (const ticker of TICKERS) {
        const answer = await buy(server.port, ticker)
        assert.strictEqual(answer.status, 200, `${ticker} through :${server.port}: ${answer.body}`)
        answered++
      }

    // The second runner dies; the first takes its shards, and every ticker trades through the first's port.
    servers[1]!.child.kill("SIGKILL")
    await waitFor("every shard on the surviving runner", async () => {
      const left = await holders()
      return left.size === 1 && left.has(`127.0.0.1:${runnerPorts[0]}`)
    })
    const after = await status()
    const survivor = after.runners.find((r) => r.address === `127.0.0.1:${runnerPorts[0]}`)
    assert.strictEqual(survivor?.shards, 30)
    assert.strictEqual(survivor?.entities.MarketAgent, TICKERS.length)
    // The dead runner is out of the ring: gone from the table, its heartbeat expired, or found unhealthy; no shards.
    const dead = after.runners.find((r) => r.address === `127.0.0.1:${runnerPorts[1]}`)
    assert.isTrue(dead === undefined || !dead.alive || !dead.healthy, JSON.stringify(dead))
    assert.strictEqual(dead?.shards ?? 0, 0)
    for (const ticker of TICKERS) {
      const answer = await buy(servers[0]!.port, ticker)
      assert.strictEqual(answer.status, 200, `${ticker} after the failover: ${answer.body}`)
      answered++
    }

    const journal = await admin(`SELECT count(*) AS n FROM ${schema}.market_trades`)
    assert.strictEqual(Number(journal[0]!.n), answered)
    // Each order was claimed under an id of its own (exactly-once over the cluster's at-least-once delivery).
    const claimed = await admin(`SELECT count(*) AS n FROM ${schema}.market_idempotency WHERE key LIKE 'keel-order:%'`)
    assert.strictEqual(Number(claimed[0]!.n), answered)
    const audit = await ctl(["market", "audit"])
    assert.isTrue(audit.ok, JSON.stringify(audit.problems))
  }, 300_000)

  it("three runners started at once on an empty schema all come up and share the shards", async () => {
    const { runner, holders } = await runnersFixture(children, schemas)
    // Keel's migrations and @effect/cluster's tables are made by whichever starts first; the others wait or retry.
    const servers = await Promise.all([runner(0), runner(1), runner(2)])
    await waitFor("shards on all three runners", async () => (await holders()).size === 3)
    for (const server of servers) {
      const health = await requestChild(server.port, { method: "GET", path: "/api/tokens" })
      assert.strictEqual(health.status, 200)
    }
    for (const server of servers) server.child.kill("SIGTERM")
  }, 300_000)

  it("runners mode on SQLite stops at start with one line, exit 1", async () => {
    const run = await runCtl(["serve", "--port", "0"], {
      ...process.env,
      KEEL_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "keel-runners-sqlite-")),
      KEEL_DATABASE_URL: undefined,
      KEEL_CLUSTER_MODE: "runners",
      KEEL_RUNNER_ADDRESS: "127.0.0.1:7400",
      KEEL_DEMO_DATA: "false"
    })
    assert.strictEqual(run.code, 1, run.stderr)
    // The database is opened and migrated first (log lines); the refusal is the last line, before any actor starts.
    const last = run.stderr.trim().split("\n").at(-1) ?? ""
    assert.match(last, /^ctl: KEEL_CLUSTER_MODE=runners needs KEEL_DATABASE_URL \(PostgreSQL\)/)
  }, 120_000)
})
