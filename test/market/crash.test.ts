import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { queryDataDir } from "../support/data-dir-db.js"
import { testWallet } from "../support/market.js"
import { requestChild, runCtl, startServer as startChild } from "../support/server.js"

// Real processes of the built package (npm test builds first): a server killed with SIGKILL mid-load.
const root = fileURLToPath(new URL("../..", import.meta.url))
const ctlBin = path.join(root, "bin", "ctl.js")
const children: Array<ChildProcess> = []

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})

const baseEnv = (dataDir: string) => ({
  ...process.env,
  KEEL_DATA_DIR: dataDir,
  KEEL_DEMO_DATA: "false",
  KEEL_LOG_FORMAT: "json",
  KEEL_LOG_LEVEL: "info",
  MARKET_RATE_LIMIT_TRADING: "100000"
})

/** `ctl … --json` awaited (not execFileSync: thirteen set-up calls in a row blocked the worker past vitest's RPC timeout). */
const ctl = async (dataDir: string, args: ReadonlyArray<string>) => {
  const run = await runCtl([...args, "--json"], baseEnv(dataDir))
  if (run.code !== 0) throw new Error(`ctl ${args.join(" ")} exited ${run.code}: ${run.stderr}`)
  return JSON.parse(run.stdout)
}

const startServer = (dataDir: string) => startChild([ctlBin, "serve", "--port", "0"], baseEnv(dataDir), children)

const post = (port: number, pathname: string, key: string, body: unknown) =>
  requestChild(port, { method: "POST", path: pathname, headers: { authorization: `Bearer ${key}` }, body })

describe("a crash in the middle of trading", () => {
  it("after kill -9 and a restart, ctl market audit passes and every trade answered 200 is in the journal", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-crash-")), "data")
    await ctl(dataDir, ["market", "agent", "create", "--ticker", "CRASH", "--name", "Crash test"])
    const wallets: Array<ReturnType<typeof testWallet> & { key: string }> = []
    for (let i = 0; i < 6; i++) {
      const wallet = testWallet(500 + i)
      const key = (await ctl(dataDir, ["market", "keys", "create", "--wallet", wallet.address])).api_key as string
      await ctl(dataDir, [
        "market",
        "coin",
        "mint",
        "--to",
        wallet.address,
        "--amount",
        "100",
        "--reason",
        "crash test"
      ])
      wallets.push({ ...wallet, key })
    }

    const server = await startServer(dataDir)
    const answered: Array<string> = []
    let stop = false
    const worker = async (w: (typeof wallets)[number]) => {
      for (let i = 0; i < 400 && !stop; i++) {
        const side = i % 2 === 0 ? "buy" : "sell"
        const amount = side === "buy" ? 0.05 : 500
        const answer = await post(server.port, `/api/tokens/CRASH/${side}`, w.key, {
          user_id: w.address,
          amount
        }).catch(() => undefined)
        if (answer === undefined) return // the server is gone
        if (answer.status === 200) {
          const body = JSON.parse(answer.body)
          answered.push(
            `${w.address.toLowerCase()}|${side}|${side === "buy" ? body.tokens_received : amount}|${body.fee}`
          )
        }
      }
    }
    const load = Promise.all(wallets.map(worker))
    // Bounded by the 2,400 trades the workers send; the deadline only guards a server that stopped answering.
    const deadline = Date.now() + 120_000
    while (answered.length < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    server.child.kill("SIGKILL")
    stop = true
    await load
    expect(answered.length).toBeGreaterThanOrEqual(60)

    // The restarted server opens the same database and serves it.
    const again = await startServer(dataDir)
    const agents = await new Promise<string>((resolve, reject) =>
      http
        .get({ host: "127.0.0.1", port: again.port, path: "/api/agents/CRASH", agent: false }, (res) => {
          let data = ""
          res.on("data", (c) => {
            data += c
          })
          res.on("end", () => resolve(data))
        })
        .on("error", reject)
    )
    expect(JSON.parse(agents).status).toBe("running")
    again.child.kill("SIGTERM")
    await new Promise((r) => again.child.once("exit", r))

    const audit = await ctl(dataDir, ["market", "audit"])
    expect(audit.problems).toEqual([])
    expect(audit.ok).toBe(true)

    const rows = await queryDataDir<{ wallet: string; side: string; tokens: bigint; fee: bigint }>(
      dataDir,
      "SELECT wallet, side, tokens, fee FROM market_trades WHERE ticker = 'CRASH'"
    )
    const units = (n: bigint) => Number(n) / 1e9
    const journal = new Map<string, number>()
    for (const row of rows) {
      const line = `${row.wallet.replace("wallet:", "")}|${row.side}|${units(row.tokens)}|${units(row.fee)}`
      journal.set(line, (journal.get(line) ?? 0) + 1)
    }
    for (const line of answered) {
      const left = journal.get(line) ?? 0
      expect(left, `answered 200 but not in the journal: ${line}`).toBeGreaterThan(0)
      journal.set(line, left - 1)
    }
  }, 300_000)
})
