import { type ChildProcess, execFile } from "node:child_process"
import * as fs from "node:fs"
import * as nodeHttp from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { testWallet } from "../support/market.js"
import { ctlBin, requestChild, root, startServer } from "../support/server.js"

// Issue 42, item 16: every amount a client reads can be read exactly, at any size. Seen from outside: a real
// `ctl serve` process and real `ctl market` processes on its data dir mint, trade and read back 18-digit
// amounts, and each `*_str` field is byte for byte the decimal the ledger holds (docs/marketplace.md, "Money is
// exact"). The JSON numbers beside them are doubles, which cannot hold these amounts.

const children: Array<ChildProcess> = []
afterAll(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})

const NANO = 1_000_000_000n
/** Exact decimal text to nano-units (the test's own arithmetic, independent of Keel's). */
const nano = (text: string): bigint => {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?$/.exec(text)
  if (match === null) throw new Error(`not an exact decimal of at most 9 decimals: ${text}`)
  const units = BigInt(match[2]!) * NANO + BigInt((match[3] ?? "").padEnd(9, "0"))
  return match[1] === "-" ? -units : units
}
/** Nano-units as the shortest exact decimal text (no exponent, no trailing zeros). */
const text = (units: bigint): string => {
  const sign = units < 0n ? "-" : ""
  const magnitude = units < 0n ? -units : units
  const fraction = String(magnitude % NANO)
    .padStart(9, "0")
    .replace(/0+$/, "")
  return `${sign}${magnitude / NANO}${fraction === "" ? "" : `.${fraction}`}`
}
const DECIMAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/

const ctl = (dataDir: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [ctlBin, "market", ...args],
      { cwd: root, env: { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_LOG_LEVEL: "warning" } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr })
    )
  })

const ctlJson = async (dataDir: string, args: ReadonlyArray<string>) => {
  const run = await ctl(dataDir, [...args, "--json"])
  expect(run.code, run.stderr).toBe(0)
  return { raw: run.stdout, json: JSON.parse(run.stdout) }
}

describe("exact money, from outside (a ctl serve process, ctl processes, real HTTP)", () => {
  it("mints, trades and reads back 18-digit amounts byte for byte", async () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-money-")), "data")
    fs.mkdirSync(dataDir, { recursive: true })
    const wallet = testWallet(4201).address
    const server = await startServer(
      [ctlBin, "serve", "--port", "0"],
      { KEEL_DATA_DIR: dataDir, KEEL_DEMO_DATA: "false", GT_REGISTRY_REPO: path.join(dataDir, "no-registry") },
      children
    )
    const http = (method: string, pathname: string, options: { key?: string; body?: string } = {}) =>
      requestChild(server.port, {
        method,
        path: pathname,
        headers: options.key === undefined ? {} : { authorization: `Bearer ${options.key}` },
        ...(options.body === undefined ? {} : { rawBody: options.body })
      })

    // ctl: an agent, a wallet key, 18-digit mints; what ctl prints is exact.
    await ctlJson(dataDir, ["agent", "create", "--ticker", "BIG", "--name", "Big"])
    const key = (await ctlJson(dataDir, ["keys", "create", "--wallet", wallet])).json.api_key as string
    const minted = await ctlJson(dataDir, [
      "coin",
      "mint",
      "--to",
      wallet,
      "--amount",
      "123456789.123456789",
      "--reason",
      "exact"
    ])
    expect(minted.raw).toContain('"amount_str": "123456789.123456789"')
    expect(minted.json.balance_str).toBe("123456789.123456789")
    expect(minted.json.amount).toBe(123456789.12345679) // the double beside it: the nearest one
    const topUp = await ctl(dataDir, ["coin", "mint", "--to", wallet, "--amount", "0.000000002", "--reason", "exact"])
    expect(topUp.code, topUp.stderr).toBe(0)
    expect(topUp.stdout).toContain("balance 123456789.123456791")
    const agentMint = await ctlJson(dataDir, [
      "coin",
      "mint",
      "--to",
      "agent:BIG",
      "--amount",
      "987654321.987654321",
      "--reason",
      "exact"
    ])
    expect(agentMint.json.balance_str).toBe("987654321.987654321")
    const price = await ctlJson(dataDir, ["coin", "set-price", "--price", "1234567890.123456789"])
    expect(price.json.price_str).toBe("1234567890.123456789")

    // HTTP: the balance, exactly.
    const balance = await http("GET", `/api/coin/balance?user_id=${wallet}`, { key })
    expect(balance.status, balance.body).toBe(200)
    expect(balance.body).toContain('"balance_str":"123456789.123456791"')
    let held = nano("123456789.123456791")

    // Trades with 18-digit amounts: as a JSON number's text, and as a decimal string.
    const receipts: Array<Record<string, unknown>> = []
    const trade = async (side: "buy" | "sell", amountJson: string) => {
      const answer = await http("POST", `/api/tokens/BIG/${side}`, {
        key,
        body: `{"user_id":"${wallet}","amount":${amountJson}}`
      })
      expect(answer.status, answer.body).toBe(200)
      const receipt = JSON.parse(answer.body) as Record<string, unknown>
      for (const [field, value] of Object.entries(receipt)) {
        if (typeof value !== "number") continue
        const exact = receipt[`${field}_str`]
        expect(typeof exact, `${field}_str`).toBe("string")
        expect(exact as string).toMatch(DECIMAL)
        // The number beside it is the nearest double of the same decimal (a price's number keeps 12 digits).
        const reading = Number(exact)
        expect(field.startsWith("price") ? Number(reading.toPrecision(12)) : reading, field).toBe(value)
      }
      receipts.push(receipt)
      return receipt as Record<string, string>
    }
    const small = await trade("buy", "10.123456789")
    expect(small.coin_spent_str).toBe("10.123456789")
    held -= nano(small.coin_spent_str!)
    expect(small.new_balance_str).toBe(text(held))
    expect(small.new_balance_str).toBe("123456779.000000002")
    // 18 digits as a JSON number: more than the curve holds, so it takes what is left and is charged for that.
    const big = await trade("buy", "100000000.123456789")
    expect(big.partial).toBe(true)
    held -= nano(big.coin_spent_str!)
    expect(big.new_balance_str).toBe(text(held))
    expect(held).toBeGreaterThan(2n ** 53n) // beyond what a double holds to the nano-unit
    // 18 digits as a decimal string: a sell of every token bought, exactly as the receipts wrote them.
    const tokens = nano(small.tokens_received_str!) + nano(big.tokens_received_str!)
    const sold = await trade("sell", `"${text(tokens)}"`)
    expect(sold.tokens_sold_str).toBe(text(tokens))
    held += nano(sold.coin_received_str!)
    expect(sold.new_balance_str).toBe(text(held))
    const readBack = await http("GET", `/api/coin/balance?user_id=${wallet}`, { key })
    expect(JSON.parse(readBack.body).balance_str).toBe(text(held))

    // The agent: minted, plus its fee shares; the same text over HTTP and through ctl.
    const agent = JSON.parse((await http("GET", "/api/agents/BIG")).body) as Record<string, string>
    expect(nano(agent.balance_str!)).toBe(nano("987654321.987654321") + nano(agent.total_revenue_str!))
    expect(agent.total_costs_str).toBe("0")
    expect(agent.burn_rate_hourly_str).toBe("0")
    const listed = (await ctlJson(dataDir, ["agent", "list"])).json as Array<Record<string, string>>
    expect(listed[0]!.balance_str).toBe(agent.balance_str)
    expect(listed[0]!.total_revenue_str).toBe(agent.total_revenue_str)
    const table = await ctl(dataDir, ["agent", "list"])
    expect(table.stdout).toContain(agent.balance_str)

    // The coin: its price, supply and market cap; the supply is every mint (trades move coin, never make it).
    const supply = nano("123456789.123456791") + nano("987654321.987654321")
    const history = JSON.parse((await http("GET", "/api/coin/history?period=1h")).body)
    expect(history.current.price_str).toBe("1234567890.123456789")
    expect(history.current.supply_str).toBe(text(supply))
    expect(history.current.market_cap_str).toBe(text((nano("1234567890.123456789") * supply) / NANO))
    expect(history.history.at(-1).price_str).toBe("1234567890.123456789")
    const audit = await ctlJson(dataDir, ["audit"])
    expect(audit.json.coin_supply_str).toBe(text(supply))

    // The token board: the day's volume is the coin of its three trades.
    const board = JSON.parse((await http("GET", "/api/tokens")).body) as Array<Record<string, string>>
    const big24 = board.find((token) => token.ticker === "BIG")!
    expect(big24.volume_24h_str).toBe(
      text(nano(small.coin_spent_str!) + nano(big.coin_spent_str!) + nano(sold.coin_received_str!))
    )
    expect(big24.price_str).toMatch(DECIMAL)
    expect(big24.market_cap_str).toMatch(DECIMAL)

    // The stream: each trade event carries the receipt's exact amounts.
    const stream = await new Promise<string>((resolve) => {
      let seen = ""
      const request = nodeHttp.get(
        { host: "127.0.0.1", port: server.port, path: "/api/stream", headers: { "last-event-id": "0" } },
        (response) => {
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => {
            seen += chunk
            if ((seen.match(/event: trade/g) ?? []).length >= 3) {
              request.destroy()
              resolve(seen)
            }
          })
        }
      )
    })
    const events = [...stream.matchAll(/event: trade\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]!))
    expect(events.map((e) => e.coin_str)).toEqual([small.coin_spent_str, big.coin_spent_str, sold.coin_received_str])
    expect(events.map((e) => e.tokens_str)).toEqual([
      small.tokens_received_str,
      big.tokens_received_str,
      sold.tokens_sold_str
    ])
    expect(events.map((e) => e.fee_str)).toEqual([small.fee_str, big.fee_str, sold.fee_str])
  }, 240_000)
})
