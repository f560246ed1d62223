import { type ChildProcess, execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { dashboardServer, launchBrowser, openPage, screenshot, WIDTHS } from "../support/browser.js"
import { ctlBin } from "../support/server.js"

// Issue 46's Market pages (docs/dashboard.md "Market"), in Debian's Chromium against `ctl serve` with the demo data:
// the token list's values against GET /api/tokens; a token page whose chart moves when a trade happens (the
// /api/stream SSE) without a reload; a buy through the form with the demo wallet's API key, its fee and unit price
// shown before sending, then its receipt; a wrong key's 401 shown as "this token cannot read this".
const children: Array<ChildProcess> = []
let browser: Browser
let server: Awaited<ReturnType<typeof dashboardServer>>
let demo: { address: string; api_key: string }

interface TokenRow {
  ticker: string
  price_str: string
  price_change_24h: number
  market_cap_str: string
  volume_24h_str: string
}

beforeAll(async () => {
  ;[browser, server] = await Promise.all([launchBrowser(), dashboardServer(children)])
  demo = JSON.parse(fs.readFileSync(path.join(server.dataDir, "demo-market.json"), "utf8")).wallet
}, 180_000)

afterAll(async () => {
  await browser?.close()
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
})

const tokens = async (): Promise<Array<TokenRow>> =>
  (await fetch(`${server.base}/api/tokens`)).json() as Promise<Array<TokenRow>>

const buy = async (ticker: string, amount: string) => {
  const response = await fetch(`${server.base}/api/tokens/${ticker}/buy`, {
    method: "POST",
    headers: { authorization: `Bearer ${demo.api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ user_id: demo.address, amount })
  })
  assert.strictEqual(response.status, 200)
  return (await response.json()) as Record<string, string>
}

const chart = async (page: Page) => ({
  points: Number(await page.locator("figure.chart").getAttribute("data-points")),
  last: (await page.locator("figure.chart").getAttribute("data-last")) ?? ""
})

/** Waits (bounded) until the chart has more than `points` points. */
const chartPast = (page: Page, points: number) =>
  until(async () => (await chart(page)).points > points, `the chart past ${points} points`)

/** Polls `check` every 100 ms, for 20 s at most (the page's CSP forbids Playwright's string-evaluated waits). */
const until = async (check: () => Promise<boolean>, what: string) => {
  const end = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const percent = (value: number) => `${value > 0 ? "+" : ""}${value.toFixed(2)} %`

// A 401 is what the browser logs as a failed resource: the one console error the wrong-key step expects.
const UNAUTHORIZED_LOG = "Failed to load resource: the server responded with a status of 401 (Unauthorized)"

describe("the Market pages", () => {
  for (const [index, width] of WIDTHS.entries()) {
    const ticker = ["SAGE", "FORGE"][index]!
    it(`at ${width} px: the list shows the API's values; ${ticker}'s chart moves with a trade; a buy through the form`, async () => {
      const { page, errors, close } = await openPage(browser, width)
      await page.goto(`${server.base}/ui/market`)
      await page.locator("tr[data-ticker]").nth(4).waitFor({ timeout: 20_000 })
      const shown = await page.locator("tr[data-ticker]").evaluateAll((rows) =>
        rows.map((row) => ({
          ticker: row.getAttribute("data-ticker"),
          price: row.querySelector('[data-field="price"]')?.textContent,
          change: row.querySelector('[data-field="change"]')?.textContent,
          cap: row.querySelector('[data-field="market-cap"]')?.textContent,
          volume: row.querySelector('[data-field="volume"]')?.textContent
        }))
      )
      const api = await tokens()
      assert.deepStrictEqual(
        shown.map((row) => row.ticker),
        api.map((row) => row.ticker),
        "the API's order (market cap, largest first)"
      )
      for (const row of api.slice(0, 3)) {
        const seen = shown.find((s) => s.ticker === row.ticker)
        assert.strictEqual(seen?.price, row.price_str, `${row.ticker} price`)
        assert.strictEqual(seen?.change, percent(row.price_change_24h), `${row.ticker} 24 h`)
        assert.strictEqual(seen?.cap, row.market_cap_str, `${row.ticker} market cap`)
        assert.strictEqual(seen?.volume, row.volume_24h_str, `${row.ticker} volume`)
      }
      // The platform coin: its price, change, supply and market cap as GET /api/coin/history answers them.
      await page.locator("figure.chart[data-points]:not([data-points='0'])").waitFor({ timeout: 20_000 })
      const coin = (await (await fetch(`${server.base}/api/coin/history?period=30d&limit=200`)).json()) as {
        current: { price_str: string; supply_str: string; market_cap_str: string }
        price_change_percent: number
        history: Array<{ price_str: string }>
      }
      assert.strictEqual(await page.locator('[data-field="coin-price"]').textContent(), coin.current.price_str)
      assert.strictEqual(await page.locator('[data-field="coin-supply"]').textContent(), coin.current.supply_str)
      assert.strictEqual(
        await page.locator('[data-field="coin-market-cap"]').textContent(),
        coin.current.market_cap_str
      )
      assert.strictEqual(
        await page.locator('[data-field="coin-change"]').textContent(),
        percent(coin.price_change_percent)
      )
      const coinChart = page.locator("figure.chart")
      assert.strictEqual(await coinChart.getAttribute("data-last"), coin.history.at(-1)?.price_str)
      // The sampler adds a point a minute: the page's answer and this one may be a sample apart.
      assert.isAtMost(Math.abs(Number(await coinChart.getAttribute("data-points")) - coin.history.length), 1)
      await screenshot(page, "market", width)

      // The token's page, opened by keyboard from its link (no reload: the marker set below must survive).
      await page.getByRole("link", { name: ticker, exact: true }).focus()
      await page.keyboard.press("Enter")
      await page.waitForURL(new RegExp(`/ui/market/${ticker}$`))
      await page.evaluate("window.marker = 46")
      // The demo's three buys (and the earlier width's trades) are the chart's history, read from the stream.
      await chartPast(page, 2)
      await page.getByText("Live: the stream is open.").waitFor({ timeout: 20_000 })
      await until(async () => (await page.getByText("Reading the history").count()) === 0, "the history read")
      const before = await chart(page)
      const row = (await tokens()).find((t) => t.ticker === ticker)!
      assert.strictEqual(before.last, row.price_str, "the chart's last point is the token's price")
      assert.strictEqual(await page.locator('.figures [data-field="market-cap"]').textContent(), row.market_cap_str)

      // A trade through the API: the chart gains its point without a reload.
      await buy(ticker, "1.5")
      await chartPast(page, before.points)
      const moved = await chart(page)
      assert.strictEqual(moved.points, before.points + 1)
      const after = (await tokens()).find((t) => t.ticker === ticker)!
      assert.strictEqual(moved.last, after.price_str, "the new last point is the price after the trade")
      assert.notStrictEqual(moved.last, before.last)
      assert.strictEqual(await page.locator('.figures [data-field="price"]').textContent(), after.price_str)

      // A buy through the form with the demo wallet's API key: fee and unit price before sending, then the receipt.
      // By keyboard: the key typed, Enter keeps it for this tab; the trade is sent by Enter in the amount field.
      await page.getByRole("textbox", { name: "API key (trading)" }).fill(demo.api_key)
      await page.getByRole("textbox", { name: "API key (trading)" }).press("Enter")
      await page.getByText("One is kept for this tab.").waitFor()
      await page.getByLabel("Wallet address (user_id)").fill(demo.address)
      await page.getByLabel("Coin to spend (fee included)").fill("2")
      const fee = page.locator('[data-quote="fee"]')
      const unit = page.locator('[data-quote="unit-price"]')
      await until(async () => (await unit.textContent()) !== "—", "the quote")
      assert.match((await fee.textContent()) ?? "", /^0\.02 coin \(1\.00 %\)$/)
      const quoted = Number(/≈ ([0-9.]+) coin per/.exec((await unit.textContent()) ?? "")?.[1])
      const received = Number(
        /≈ ([0-9.]+)/.exec((await page.locator('[data-quote="receive"]').textContent()) ?? "")?.[1]
      )
      await page.getByLabel("Coin to spend (fee included)").press("Enter")
      const receipt = page.getByRole("status", { name: "receipt" })
      await receipt.waitFor({ timeout: 20_000 })
      const fields = Object.fromEntries(
        await receipt
          .locator("dd[data-receipt]")
          .evaluateAll((dds) => dds.map((dd) => [dd.getAttribute("data-receipt"), dd.textContent]))
      )
      assert.strictEqual(fields.fee, "0.02", "the fee shown before sending is the receipt's")
      assert.strictEqual(fields.coin_spent, "2")
      const charged = Number(fields.price_per_token)
      assert.isBelow(Math.abs(quoted - charged) / charged, 1e-6, `unit price quoted ${quoted}, charged ${charged}`)
      assert.isBelow(Math.abs(received - Number(fields.tokens_received)) / received, 1e-6)
      await chartPast(page, moved.points)

      // A sell through the form: its fee, unit price and coin received are estimates off the curve, shown first.
      await page.getByRole("radio", { name: "Sell" }).check()
      await page.getByLabel(`${ticker} tokens to sell`).fill("10000")
      const number = async (field: string) =>
        Number(/([0-9][0-9.]*)/.exec((await page.locator(`[data-quote="${field}"]`).textContent()) ?? "")?.[1])
      await until(async () => (await unit.textContent())?.includes("coin per") === true, "the sell quote")
      const [sellFee, sellUnit, sellReceive] = [
        await number("fee"),
        await number("unit-price"),
        await number("receive")
      ]
      await page.getByRole("button", { name: `Sell ${ticker}` }).click()
      await receipt.filter({ hasText: "Sold" }).waitFor({ timeout: 20_000 })
      const sold = Object.fromEntries(
        await receipt
          .locator("dd[data-receipt]")
          .evaluateAll((dds) => dds.map((dd) => [dd.getAttribute("data-receipt"), dd.textContent]))
      )
      assert.strictEqual(sold.tokens_sold, "10000")
      for (const [quoted, answered] of [
        [sellFee, Number(sold.fee)],
        [sellUnit, Number(sold.price_per_token)],
        [sellReceive, Number(sold.coin_received)]
      ] as const)
        assert.isBelow(Math.abs(quoted - answered) / answered, 1e-6, `sell: quoted ${quoted}, answered ${answered}`)
      await page.getByRole("radio", { name: "Buy" }).check()

      // A wrong key: the refusal as the API gave it, "this token cannot read this".
      await page.getByRole("button", { name: "Forget" }).click()
      await page.getByRole("textbox", { name: "API key (trading)" }).fill("keel_not-a-key-of-anyone")
      await page.getByRole("button", { name: "Use" }).click()
      const answered = page.waitForResponse((response) => response.url().endsWith(`/api/tokens/${ticker}/buy`))
      await page.getByRole("button", { name: `Buy ${ticker}` }).click()
      assert.strictEqual((await answered).status(), 401)
      const refusal = page.getByRole("alert").filter({ hasText: "this token cannot read this" })
      await refusal.waitFor({ timeout: 20_000 })
      assert.match((await refusal.textContent()) ?? "", /UNAUTHORIZED this token cannot read this \(/)

      assert.strictEqual(await page.evaluate("window.marker"), 46, "no reload")
      await screenshot(page, "market-token", width)
      assert.deepStrictEqual(
        errors.filter((error) => error !== UNAUTHORIZED_LOG),
        []
      )
      await close()
    }, 120_000)
  }

  it("a long list pages: ten a page, Next and Previous show the API's pages in its order", async () => {
    // Six more tokens (eleven in all), launched by `ctl market agent create` on the server's data dir. A `ctl` that
    // finds no dist/ (another `npm run build` in the same tree replacing it) is run again, up to three times.
    const launch = (ticker: string) =>
      new Promise<string | undefined>((resolve) =>
        execFile(
          process.execPath,
          [ctlBin, "market", "agent", "create", "--ticker", ticker, "--name", `Page ${ticker.slice(4)}`],
          { env: { ...process.env, KEEL_DATA_DIR: server.dataDir }, timeout: 60_000 },
          (error, _stdout, stderr) => resolve(error ? `${error.message}\n${stderr}` : undefined)
        )
      )
    for (const ticker of ["PAGEA", "PAGEB", "PAGEC", "PAGED", "PAGEE", "PAGEF"]) {
      let failure = await launch(ticker)
      for (let attempt = 1; attempt < 3 && failure?.includes("ERR_MODULE_NOT_FOUND"); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 5_000))
        failure = await launch(ticker)
      }
      assert.isUndefined(failure, failure)
    }
    const all = await tokens()
    assert.strictEqual(all.length, 11)
    const { page, errors, close } = await openPage(browser, 1440)
    await page.goto(`${server.base}/ui/market`)
    await page.locator("tr[data-ticker]").nth(10).waitFor({ timeout: 20_000 })
    await page.getByLabel("Per page").selectOption("10")
    const shown = () =>
      page.locator("tr[data-ticker]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-ticker")))
    await until(async () => (await page.locator("tr[data-ticker]").count()) === 10, "10 rows")
    assert.deepStrictEqual(
      await shown(),
      all.slice(0, 10).map((t) => t.ticker)
    )
    assert.isTrue(await page.getByRole("button", { name: "Previous" }).isDisabled())
    await page.getByRole("button", { name: "Next" }).click()
    await until(async () => (await page.locator("tr[data-ticker]").count()) === 1, "1 rows")
    assert.deepStrictEqual(await shown(), [all[10]!.ticker])
    assert.isTrue(await page.getByRole("button", { name: "Next" }).isDisabled())
    await page.getByRole("button", { name: "Previous" }).click()
    await until(async () => (await page.locator("tr[data-ticker]").count()) === 10, "10 rows")
    assert.deepStrictEqual(errors, [])
    await close()
  }, 180_000)
})
