import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { ctlBin, root, startServer } from "./server.js"

/** Debian's Chromium (.ci/run installs the `chromium` package when missing); Playwright never downloads one. */
export const CHROMIUM = "/usr/bin/chromium"

/** The widths every page is checked at (issue 46): a phone and a desktop. */
export const WIDTHS = [375, 1440] as const

/** Screenshots of each page at each width, kept as the test run's artifacts (docs/dashboard.md uses them). */
export const ARTIFACTS = path.join(root, "test-artifacts", "ui")

export const ADMIN_TOKEN = "ui-test-admin-token"

/**
 * `ctl serve` on every surface and the dashboard, with the demo data (docs/marketplace.md "Demo data": agents,
 * trades, a demo wallet with its API key in `<data dir>/demo-market.json`), an admin token for the product
 * readout, its own data dir.
 */
export const dashboardServer = async (children: Array<ChildProcess>, env: Record<string, string> = {}) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-ui-"))
  const server = await startServer(
    [ctlBin, "serve", "--port", "0"],
    { KEEL_DATA_DIR: dataDir, KEEL_DEMO_DATA: "true", KEEL_ADMIN_TOKENS: ADMIN_TOKEN, ...env },
    children
  )
  return { ...server, dataDir, base: `http://127.0.0.1:${server.port}` }
}

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] })

/**
 * A page at `width` that records every console error and uncaught exception (a page must have none) and every
 * request it made (a test checks that nothing was sent it did not click).
 */
export const openPage = async (browser: Browser, width: number) => {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  const page = await context.newPage()
  const errors: Array<string> = []
  const requests: Array<{ method: string; url: string }> = []
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text())
  })
  page.on("pageerror", (error) => errors.push(String(error)))
  page.on("request", (request) => requests.push({ method: request.method(), url: request.url() }))
  return { page, errors, requests, close: () => context.close() }
}

export const screenshot = async (page: Page, name: string, width: number) => {
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}.png`), fullPage: true })
}
