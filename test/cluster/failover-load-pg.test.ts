import type { ChildProcess } from "node:child_process"
import { afterAll, assert, describe, it } from "vitest"
import { testWallet } from "../support/market.js"
import { postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"
import { openEventStream, requestChild } from "../support/server.js"

// Issue 45's failover under load (docs/cluster.md, "Failover"): three `ctl serve` runners on one PostgreSQL schema,
// trades on ten tickers through all three HTTP ports, one runner SIGKILLed mid-load; an order that failed (its
// connection cut, a 5xx) is sent again with its Idempotency-Key to another port. Then every order answered 200 is in
// the journal exactly once, no order twice, the audit is clean, and an SSE client on a survivor saw every event once,
// in order. A request waits for its ticker's actor at most MARKET_TRADE_TIMEOUT (3 s here), then is answered 503
// TRADE_OUTCOME_UNKNOWN with its key, and is sent again. Bounded: 6 senders × 30 orders, each order at most 40 tries;
// every wait has a limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

const TICKERS = Array.from({ length: 10 }, (_, i) => `FAIL${String.fromCharCode(65 + i)}`)
const SENDERS = 6
const ORDERS = 30
const TRADE_TIMEOUT_MS = 3_000

describe.skipIf(postgresSkipReason !== undefined)("three runners, one SIGKILLed under load", () => {
  it("every order answered 200 is journaled once, the audit is clean, a survivor's stream has every event once", async () => {
    const { schema, ctl, runner, holders } = await runnersFixture(children, schemas, {
      MARKET_TRADE_TIMEOUT: `${TRADE_TIMEOUT_MS} millis`
    })
    for (const ticker of TICKERS) await ctl(["market", "agent", "create", "--ticker", ticker, "--name", ticker])
    const wallets: Array<{ address: string; key: string }> = []
    for (let i = 0; i < SENDERS; i++) {
      const wallet = testWallet(4600 + i)
      const key = (await ctl(["market", "keys", "create", "--wallet", wallet.address])).api_key as string
      await ctl(["market", "coin", "mint", "--to", wallet.address, "--amount", "1000", "--reason", "failover test"])
      wallets.push({ address: wallet.address, key })
    }
    const servers = await Promise.all([runner(0), runner(1), runner(2)])
    await waitFor("shards on all three runners", async () => (await holders()).size === 3)
    const firstSeq = Number((await admin(`SELECT coalesce(max(seq), 0) AS n FROM ${schema}.market_events`))[0]!.n)
    const stream = await openEventStream(servers[0]!.port)

    const dead = new Set<number>()
    const answered = new Map<string, string>()
    let longestWaitMs = 0
    let retries = 0
    let outcomesUnknown = 0
    const send = async (sender: number) => {
      const wallet = wallets[sender]!
      for (let i = 0; i < ORDERS; i++) {
        const key = `load-${sender}-${i}`
        const ticker = TICKERS[(sender * 7 + i * 3) % TICKERS.length]!
        for (let attempt = 0; ; attempt++) {
          if (attempt >= 40) throw new Error(`order ${key} never answered after 40 tries`)
          const target = (sender + i + attempt) % servers.length
          if (dead.has(target)) continue
          const started = Date.now()
          const answer = await requestChild(servers[target]!.port, {
            method: "POST",
            path: `/api/tokens/${ticker}/buy`,
            headers: { authorization: `Bearer ${wallet.key}`, "idempotency-key": key },
            body: { user_id: wallet.address, amount: 0.25 }
          }).catch(() => undefined)
          longestWaitMs = Math.max(longestWaitMs, Date.now() - started)
          if (answer !== undefined && answer.status === 200) {
            answered.set(key, answer.body)
            break
          }
          if (answer !== undefined && answer.status < 500)
            throw new Error(`order ${key} refused: ${answer.status} ${answer.body}`)
          if (answer?.status === 503 && JSON.parse(answer.body).code === "TRADE_OUTCOME_UNKNOWN") {
            // The wait was cut at the bound; the answer names the order's key to send it again with.
            assert.strictEqual(JSON.parse(answer.body).idempotency_key, key)
            outcomesUnknown++
          }
          retries++
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
    }
    const load = Promise.all(wallets.map((_, sender) => send(sender)))
    await waitFor("a third of the orders answered", async () => answered.size >= (SENDERS * ORDERS) / 3, 120_000)
    servers[2]!.child.kill("SIGKILL")
    dead.add(2)
    await load

    assert.strictEqual(answered.size, SENDERS * ORDERS)
    // Exactly once: one claim per order (the key's row, committed with its trade), one trade per claim.
    const claims = await admin(
      `SELECT key FROM ${schema}.market_idempotency WHERE key LIKE 'load-%' AND response <> '' ORDER BY key`
    )
    assert.deepStrictEqual(
      claims.map((row) => String(row.key)),
      [...answered.keys()].sort()
    )
    const trades = Number((await admin(`SELECT count(*) AS n FROM ${schema}.market_trades`))[0]!.n)
    assert.strictEqual(trades, SENDERS * ORDERS)
    const audit = await ctl(["market", "audit"])
    assert.isTrue(audit.ok, JSON.stringify(audit.problems))

    // The survivor's stream: every event committed since it opened, once each, in order.
    const committed = (
      await admin(`SELECT seq FROM ${schema}.market_events WHERE seq > $1 ORDER BY seq`, [firstSeq])
    ).map((row) => Number(row.seq))
    await waitFor("every event on the survivor's stream", async () => stream.ids.length >= committed.length, 60_000)
    stream.close()
    assert.deepStrictEqual(stream.ids, committed)
    console.log(
      `failover under load: ${answered.size} orders, ${retries} retries (${outcomesUnknown} answered TRADE_OUTCOME_UNKNOWN), longest single wait ${longestWaitMs} ms`
    )
    // No request waited past the bound (plus what a loaded 2-core machine adds around it): a bound on a hang, not a
    // speed claim. Without MARKET_TRADE_TIMEOUT a caller would wait out the failover (about one lock expiry, 6 s,
    // plus a health interval).
    assert.isBelow(longestWaitMs, TRADE_TIMEOUT_MS + 10_000)
  }, 400_000)

  it("a third runner joining under load takes about a third of the shards, and no trade fails", async () => {
    // The production shard count: with the fixture's 30, the ring's share for three runners varies too much with
    // their (random) ports to say "a third" (4 of 30 was seen).
    const { schema, ctl, runner, holders, runnerPorts } = await runnersFixture(children, schemas, {
      KEEL_CLUSTER_SHARDS: "300"
    })
    for (const ticker of TICKERS) await ctl(["market", "agent", "create", "--ticker", ticker, "--name", ticker])
    const wallet = testWallet(4700)
    const key = (await ctl(["market", "keys", "create", "--wallet", wallet.address])).api_key as string
    await ctl(["market", "coin", "mint", "--to", wallet.address, "--amount", "1000", "--reason", "join test"])
    const first = await Promise.all([runner(0), runner(1)])
    await waitFor("shards on both runners", async () => (await holders()).size === 2)

    // One try per order: a trade that is not answered 200 at once fails the test.
    let sent = 0
    let joined = false
    const send = async (sender: number) => {
      for (let i = 0; i < 40 || !joined; i++) {
        if (i >= 400) throw new Error("the third runner never took its shards")
        const answer = await requestChild(first[(sender + i) % 2]!.port, {
          method: "POST",
          path: `/api/tokens/${TICKERS[(sender * 3 + i) % TICKERS.length]}/buy`,
          headers: { authorization: `Bearer ${key}` },
          body: { user_id: wallet.address, amount: 0.01 }
        })
        assert.strictEqual(answer.status, 200, answer.body)
        sent++
      }
    }
    const load = Promise.all([0, 1, 2, 3].map(send))
    await waitFor("some trades before the third runner", async () => sent >= 20, 120_000)
    await runner(2)
    await waitFor("the third runner's shards", async () => (await holders()).size === 3)
    // Shards move one by one as the old owners let them go: the share is read once every shard is held and the
    // third runner's count has not changed for three polls a second apart.
    const thirdHolds = async () =>
      Number(
        (
          await admin(`SELECT count(*) AS n FROM ${schema}.cluster_locks WHERE address = $1`, [
            `127.0.0.1:${runnerPorts[2]}`
          ])
        )[0]!.n
      )
    const seen: Array<number> = []
    await waitFor(
      "the handover to settle",
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        const total = Number((await admin(`SELECT count(*) AS n FROM ${schema}.cluster_locks`))[0]!.n)
        seen.push(total === 300 ? await thirdHolds() : -1)
        const last = seen.slice(-3)
        return last.length === 3 && last[0]! > 0 && last.every((n) => n === last[0])
      },
      120_000
    )
    joined = true
    await load

    const third = await thirdHolds()
    // The hash ring gives each of three equal runners about 100 of the 300 shards.
    assert.isAtLeast(third, 60, `the third runner holds ${third} of 300 shards`)
    assert.isAtMost(third, 140, `the third runner holds ${third} of 300 shards`)
    const trades = Number((await admin(`SELECT count(*) AS n FROM ${schema}.market_trades`))[0]!.n)
    assert.strictEqual(trades, sent)
    console.log(`a runner joined under load: ${sent} trades, none failed; it took ${third} of 300 shards`)
  }, 400_000)
})
