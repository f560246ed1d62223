import type { ChildProcess } from "node:child_process"
import type { Browser } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { dashboardServer, launchBrowser, openPage, screenshot, WIDTHS } from "../support/browser.js"
import {
  DEMO_HOSTS,
  exchangeOnPage,
  exchangeToken,
  type GrantCredential,
  getJson,
  grantCredential,
  seedFleet,
  unexpectedErrors
} from "../support/fleet-ui.js"

// Issue 46: the dashboard's Fleet page (/ui/fleet) and a host page (/ui/fleet/HOST), read with a vault token from a
// grant exchange on the page; the values shown are compared with the control plane's own answers; a token that
// cannot read them is shown as such.
const children: Array<ChildProcess> = []
let browser: Browser
let server: Awaited<ReturnType<typeof dashboardServer>>
let dashboard: GrantCredential
let token: string

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`

beforeAll(async () => {
  ;[browser, server] = await Promise.all([launchBrowser(), dashboardServer(children)])
  await seedFleet(server.base, server.dataDir)
  dashboard = await grantCredential(server.dataDir, "dashboard", ["fleet-read"], [...DEMO_HOSTS])
  token = await exchangeToken(server.base, dashboard)
}, 180_000)

afterAll(async () => {
  await browser?.close()
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
})

describe("the Fleet page", () => {
  for (const width of WIDTHS)
    it(`at ${width} px: hosts, beacons, verdicts, janitor, filesystems, reconciler and queue as the API answers them; a host page`, async () => {
      const { page, errors, close } = await openPage(browser, width)
      await page.goto(`${server.base}/ui/fleet`)
      await page.getByRole("heading", { name: "Fleet", exact: true }).waitFor()
      assert.include(await page.locator("main").textContent(), "vault token (control plane)")
      await exchangeOnPage(page, dashboard)
      // Only the token is kept, in this tab's session storage; the grant's secret nowhere.
      const stored = String(await page.evaluate("JSON.stringify({ ...sessionStorage, ...localStorage })"))
      assert.notInclude(stored, dashboard.secret)
      assert.match(String(await page.evaluate('sessionStorage.getItem("keel.vault") ?? ""')), /^kvt_/)
      await page.locator("tr[data-host]").first().waitFor()

      const hosts = (await getJson(server.base, "/api/fleet/hosts", token)).body
      const overview = (await getJson(server.base, "/api/fleet/overview", token)).body
      const reconciler = (await getJson(server.base, "/api/fleet/services/runs/latest", token)).body

      const names = await page
        .locator("tr[data-host]")
        .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-host")))
      assert.deepStrictEqual(
        names,
        hosts.hosts.map((h: { name: string }) => h.name)
      )
      for (const host of hosts.hosts) {
        const row = page.locator(`tr[data-host="${host.name}"]`)
        const shown = overview.fleet.hosts.find((h: { host: string }) => h.host === host.name)
        const verdict = await row.locator("[data-field=verdict]").textContent()
        if (shown.claiming === null) assert.strictEqual(verdict, "no verdict (incomplete evidence)")
        else {
          assert.include(verdict, shown.claiming.admits ? "admits work" : "does not admit")
          for (const reason of shown.claiming.reasons) assert.include(verdict, reason)
        }
        const janitor = await row.locator("[data-field=janitor]").textContent()
        assert.strictEqual(
          janitor,
          host.janitor.state === "present" ? host.janitor.document.cleanup_state.outcome : "none published"
        )
        if (host.beacon.state === "present") {
          assert.strictEqual(
            await row.locator("[data-field=freshness]").textContent(),
            shown.beacon.fresh ? "fresh" : "stale"
          )
          for (const disk of host.beacon.document.disks)
            assert.strictEqual(
              await row.locator(`[data-mount="${disk.mount}"] [data-field=free]`).textContent(),
              `${gib(disk.available_bytes)} available of ${gib(disk.total_bytes)}`
            )
        } else assert.include(await row.textContent(), "no beacon")
      }
      // forge-1 published everything the test seeded.
      const forge1 = page.locator('tr[data-host="forge-1"]')
      assert.strictEqual(await forge1.locator("[data-field=janitor]").textContent(), "healthy_noop")
      assert.include(await forge1.locator("[data-field=capacity]").textContent(), "ready")
      assert.strictEqual(
        await forge1.locator('[data-mount="/var/lib/keel"] [data-field=free]').textContent(),
        "102.45 GiB available of 465.66 GiB"
      )

      // The job queue and the reconciler's last report, with its alerts.
      for (const [state, count] of Object.entries(overview.queue.counts))
        assert.strictEqual(await page.locator(`tr[data-state="${state}"] td`).textContent(), String(count))
      assert.isNotNull(reconciler.latest)
      assert.include(await page.locator("[data-field=latest-run]").textContent(), reconciler.latest.run_id)
      assert.isAbove(reconciler.latest.alerts.length, 0)
      for (const alert of reconciler.latest.alerts.slice(0, 10))
        assert.include(
          await page.locator(`tr[data-alert="${alert.target}/${alert.service}"]`).textContent(),
          alert.reason
        )
      assert.isAtMost(Number(await page.evaluate("document.documentElement.scrollWidth")), width)
      await screenshot(page, "fleet", width)

      // By keyboard: the host's link, then Enter, opens its page without a reload.
      await forge1.getByRole("link", { name: "forge-1" }).focus()
      await page.keyboard.press("Enter")
      await page.waitForURL(/\/ui\/fleet\/forge-1$/)
      await page.getByRole("heading", { name: "Host forge-1" }).waitFor()
      await page.locator("tr[data-observation]").first().waitFor()
      const gates = (await getJson(server.base, "/api/fleet/gates/forge-1", token)).body
      const services = (await getJson(server.base, "/api/fleet/services", token)).body
      const sources = await page
        .locator("tr[data-observation]")
        .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-observation")))
      assert.deepStrictEqual(
        sources,
        gates.observations.slice(0, 10).map((o: { source: string }) => o.source)
      )
      for (const observation of gates.observations.slice(0, 10))
        assert.strictEqual(
          await page.locator(`tr[data-observation="${observation.source}"] [data-field=state]`).textContent(),
          observation.state
        )
      const verdict = await page.locator("dl.facts [data-field=verdict]").textContent()
      if (gates.claiming === null) assert.strictEqual(verdict, "no verdict (incomplete evidence)")
      else assert.include(verdict, gates.claiming.admits ? "admits work" : "does not admit")
      assert.strictEqual(
        await page.locator('tr[data-unit="keel-api"] [data-field=unit-state]').textContent(),
        "loaded / active / running"
      )
      for (const service of services.services.filter((s: { target: string }) => s.target === "forge-1"))
        assert.strictEqual(
          await page.locator(`tr[data-service="${service.name}"] [data-field=service-state]`).textContent(),
          service.state
        )
      assert.isAtMost(Number(await page.evaluate("document.documentElement.scrollWidth")), width)
      await screenshot(page, "fleet-host", width)
      // Back goes to the fleet without asking for the token again (kept in this tab).
      await page.goBack()
      await page.locator('tr[data-host="forge-1"]').waitFor()
      assert.deepStrictEqual(errors, [])
      await close()
    }, 120_000)

  it("a wrong token, and one whose grant lacks fleet-read, are shown as 'this token cannot read this'", async () => {
    const { page, errors, close } = await openPage(browser, 1440)
    await page.goto(`${server.base}/ui/fleet`)
    const field = page.getByRole("form", { name: "vault token (control plane)" })
    await field.getByLabel("vault token (control plane)").fill("kvt_not-a-token-of-this-vault")
    await field.getByRole("button", { name: "Use" }).click()
    const refused = page.getByRole("alert")
    await refused.waitFor()
    assert.include(await refused.textContent(), "this token cannot read this")
    assert.include(await refused.textContent(), "401")
    assert.strictEqual(await page.locator("tr[data-host]").count(), 0)

    // A grant credential with a wrong secret: the vault's 401, and no token kept.
    await page.getByText("Or exchange a grant credential for a token").click()
    const exchange = page.getByRole("form", { name: "grant exchange" })
    await exchange.getByLabel("grant id").fill(dashboard.grant_id)
    await exchange.getByLabel("consumer").fill(dashboard.consumer)
    await exchange.getByLabel("secret").fill("not-the-secret")
    await exchange.getByRole("button", { name: "Exchange" }).click()
    await page.getByRole("alert").filter({ hasText: "the vault refused this grant" }).waitFor()
    assert.include(await page.getByRole("alert").filter({ hasText: "the vault refused" }).textContent(), "401")

    // A live token of a consumer that holds no fleet-read: 403, said the same way.
    const other = await grantCredential(server.dataDir, "beacon-forge-1", ["host-health-write"], ["forge-1"])
    await exchangeOnPage(page, other)
    await page.getByRole("alert").filter({ hasText: "403" }).waitFor()
    assert.include(await page.getByRole("alert").textContent(), "this token cannot read this")

    // The host page's jobs need job-read for the host, which the dashboard's fleet-read grant does not hold: asked
    // only on a click, and refused as the others are.
    await exchangeOnPage(page, dashboard)
    await page.locator('tr[data-host="forge-1"]').getByRole("link", { name: "forge-1" }).click()
    await page.locator("tr[data-observation]").first().waitFor()
    assert.strictEqual(await page.getByRole("alert").count(), 0)
    await page.getByRole("button", { name: "List running and queued jobs" }).click()
    await page.getByRole("alert").filter({ hasText: "403" }).waitFor()
    assert.include(await page.getByRole("alert").textContent(), "this token cannot read this")
    assert.deepStrictEqual(unexpectedErrors(errors, [401, 403]), [])
    await close()
  }, 120_000)
})
