import type { ChildProcess } from "node:child_process"
import { randomUUID } from "node:crypto"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { buckets, chooseVariant } from "../../src/services/product/Hashing.js"
import { count, lift, percent, pValue } from "../../src/ui/pages/experiments/format.js"
import { ADMIN_TOKEN, dashboardServer, launchBrowser, openPage, screenshot, WIDTHS } from "../support/browser.js"

// Issue 46: the experiments and analytics pages (/ui/experiments…) against `ctl serve` with the demo registry
// (examples/product-registry.yml) and an admin token. The demo has no exposures or events, so this test makes them
// through the public endpoints (/api/experiments/assign, /api/analytics/web/collect): a balanced experiment
// (onboarding-headline-2026-11, no sample ratio mismatch) and one whose subjects were picked so that its split is far
// from the configured weights (landing-hero: a sample ratio mismatch). What the pages show is compared with the API.
const children: Array<ChildProcess> = []
let browser: Browser
let server: Awaited<ReturnType<typeof dashboardServer>>

const BALANCED = "onboarding-headline-2026-11"
const SKEWED = "landing-hero"
const SITE = "keel-demo-web"
const TOKEN_FIELD = "admin token (product readout)"

const assign = async (app: string, key: string, platform: string, surface: string, subject: string) => {
  const url = `${server.base}/api/experiments/assign?app_id=${app}&platform=${platform}&surface=${surface}&subject=${subject}`
  const response = await fetch(url, { headers: { "x-client-key": key } })
  assert.strictEqual(response.status, 200)
  return ((await response.json()) as { variant: string | null }).variant
}

const collect = async (events: ReadonlyArray<Record<string, unknown>>) => {
  const response = await fetch(`${server.base}/api/analytics/web/collect`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ site_id: SITE, events: events.map((event) => ({ event_id: randomUUID(), ...event })) })
  })
  assert.strictEqual(response.status, 202)
  assert.deepStrictEqual(((await response.json()) as { rejected: Array<unknown> }).rejected, [])
}

const readout = async <A>(path: string): Promise<A> => {
  const response = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  assert.strictEqual(response.status, 200, path)
  return (await response.json()) as A
}

interface Results {
  readonly variants: ReadonlyArray<{
    readonly name: string
    readonly subjects: number
    readonly conversions: number
    readonly conversion_rate: number | null
    readonly lift: number | null
    readonly p_value: number | null
    readonly probability_to_beat_control: number | null
  }>
  readonly srm: { readonly mismatch: boolean } | null
}
type Row = { readonly visitors: number; readonly pageviews: number }
interface Summary {
  readonly top_pages: ReadonlyArray<Row & { readonly page: string }>
  readonly top_referrers: ReadonlyArray<Row & { readonly referrer: string }>
  readonly top_utm_sources: ReadonlyArray<Row & { readonly utm_source: string }>
}

beforeAll(async () => {
  ;[browser, server] = await Promise.all([launchBrowser(), dashboardServer(children)])
  const now = Date.now()
  // Balanced: 60 subjects assigned as they come; a third of each variant's converts, more of outcome-first's.
  const conversions: Array<Record<string, unknown>> = []
  for (let i = 0; i < 60; i++) {
    const subject = `ui-onboarding-${i}`
    const variant = await assign("keel-demo-ios", "pk_demo_ios_4f1c9a7e2b", "ios", "onboarding", subject)
    assert.isNotNull(variant)
    if (i % (variant === "control" ? 4 : 2) === 0)
      conversions.push({ name: "signup", timestamp: Date.now(), visitor_id: subject })
  }
  // Skewed: subjects chosen (by the assignment's own hash) so that 40 land in control and 4 in each other variant,
  // against weights 0.34/0.33/0.33 — a sample ratio mismatch.
  const want = new Map([
    ["control", 40],
    ["screenshot", 4],
    ["quote", 4]
  ])
  const variants = [
    { name: "control", weight: 0.34 },
    { name: "screenshot", weight: 0.33 },
    { name: "quote", weight: 0.33 }
  ]
  for (let i = 0; [...want.values()].some((left) => left > 0); i++) {
    const subject = `ui-landing-${i}`
    const bucket = buckets(SKEWED, subject)
    if (bucket.traffic >= 0.5) continue
    const name = chooseVariant(variants, bucket.variant)?.name ?? ""
    const left = want.get(name) ?? 0
    if (left === 0) continue
    want.set(name, left - 1)
    assert.strictEqual(await assign("keel-demo-web", "pk_demo_web_8d2e61b0c3", "web", "landing", subject), name)
    if (i % 3 === 0) conversions.push({ name: "signup", timestamp: Date.now(), visitor_id: subject })
  }
  // Pageviews for the site's analytics: pages, referrers and UTM sources with distinct counts.
  const pages = [
    ["/", 9, "https://news.ycombinator.com/item?id=1", "hn"],
    ["/pricing", 5, "https://www.google.com/search", "google"],
    ["/docs/install", 3, "https://github.com/keel", undefined],
    ["/blog/keel-0-1", 2, undefined, "newsletter"]
  ] as const
  const views: Array<Record<string, unknown>> = []
  pages.forEach(([page, times, referrer, source], p) => {
    for (let v = 0; v < times; v++)
      views.push({
        name: "pageview",
        timestamp: now - (v % 3) * 86_400_000,
        visitor_id: `ui-visitor-${p}-${v % 4}`,
        url: `https://demo.keel.dev${page}?ref=x`,
        ...(referrer === undefined ? {} : { referrer }),
        ...(source === undefined ? {} : { utm: { source } })
      })
  })
  await collect([...conversions, ...views])
}, 240_000)

afterAll(async () => {
  await browser?.close()
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
})

const enterToken = async (page: Page, token: string) => {
  await page.getByRole("textbox", { name: TOKEN_FIELD }).fill(token)
  await page.getByRole("textbox", { name: TOKEN_FIELD }).press("Enter")
}

/** The readout's table as shown: per variant, the numbers' text. */
const shownVariants = (page: Page) =>
  page.locator("table.variants tbody tr").evaluateAll((rows) =>
    rows.map((row) => {
      const cell = (field: string) => row.querySelector(`[data-field="${field}"]`)?.textContent?.trim() ?? ""
      return {
        name: row.getAttribute("data-variant"),
        subjects: cell("subjects"),
        conversions: cell("conversions"),
        conversion_rate: cell("conversion_rate"),
        lift: cell("lift"),
        p_value: cell("p_value"),
        probability_to_beat_control: cell("probability_to_beat_control"),
        interval_drawn: row.querySelector('[data-field="conversion_rate_ci"] svg line.ci-range') !== null
      }
    })
  )

const expectedVariants = (results: Results) =>
  results.variants.map((variant) => ({
    name: variant.name,
    subjects: count(variant.subjects),
    conversions: count(variant.conversions),
    conversion_rate: percent(variant.conversion_rate),
    lift: lift(variant.lift),
    p_value: pValue(variant.p_value),
    probability_to_beat_control: percent(variant.probability_to_beat_control),
    interval_drawn: variant.subjects > 0
  }))

const checkReadout = async (page: Page, id: string) => {
  const results = await readout<Results>(`/api/experiments/${id}/results?metric=signup`)
  await page.locator("table.variants").waitFor({ timeout: 20_000 })
  assert.deepStrictEqual(await shownVariants(page), expectedVariants(results))
  assert.strictEqual(await page.locator(".srm-warning").count(), results.srm?.mismatch === true ? 1 : 0, id)
  return results
}

const shownList = (page: Page, list: string) =>
  page
    .locator(`table[data-list="${list}"] tbody tr`)
    .evaluateAll((rows) =>
      rows.map((row) => [...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim() ?? ""))
    )

describe("the experiments and analytics pages", () => {
  it("a wrong admin token reads 'this token cannot read this'", async () => {
    const { page, errors, requests, close } = await openPage(browser, 1440)
    await page.goto(`${server.base}/ui/experiments/${BALANCED}`)
    // No token in the tab yet: the page asks for one and sends nothing.
    await page.getByText("Enter an admin token above to read this experiment.").waitFor()
    assert.isFalse(requests.some((request) => request.url.includes("/results")))
    await enterToken(page, "not-the-admin-token")
    await page.getByRole("alert").filter({ hasText: "ADMIN_TOKEN_INVALID" }).waitFor({ timeout: 20_000 })
    assert.include((await page.getByRole("alert").textContent()) ?? "", "this token cannot read this")
    assert.strictEqual(await page.locator("table.variants").count(), 0)
    // Browsers log a failed fetch's 401 to the console themselves; nothing else may be logged.
    assert.deepStrictEqual(
      errors.filter((error) => !/status of 401/.test(error)),
      []
    )
    await close()
  }, 60_000)

  for (const width of WIDTHS)
    it(`at ${width} px: a readout's numbers and SRM warning, and a site's top lists, are the API's`, async () => {
      const { page, errors, close } = await openPage(browser, width)
      await page.goto(`${server.base}/ui/experiments`)
      await enterToken(page, ADMIN_TOKEN)
      await page.getByText("One is kept for this tab.").waitFor()

      // The balanced experiment: every variant's numbers as the API gives them, no SRM warning.
      await page.getByRole("link", { name: BALANCED }).click()
      await page.waitForURL(new RegExp(`/ui/experiments/${BALANCED}$`))
      const balanced = await checkReadout(page, BALANCED)
      assert.isFalse(balanced.srm?.mismatch ?? true, "the balanced split passes the check")
      assert.isAbove(balanced.variants[1]!.conversions, 0)
      assert.isNotNull(balanced.variants[1]!.p_value)
      await screenshot(page, "experiment", width)

      // The skewed one, opened by keyboard from the list: the SRM warning, saying what it means.
      await page.goBack()
      await page.getByRole("link", { name: SKEWED }).focus()
      await page.keyboard.press("Enter")
      await page.waitForURL(new RegExp(`/ui/experiments/${SKEWED}$`))
      const skewed = await checkReadout(page, SKEWED)
      assert.isTrue(skewed.srm?.mismatch)
      const warning = (await page.locator(".srm-warning").textContent()) ?? ""
      assert.include(warning, "Sample ratio mismatch")
      assert.include(warning, "differently from the configured weights")
      assert.include(warning, "not trustworthy until the cause is found")
      await screenshot(page, "experiment-srm", width)

      // The site's analytics: totals, the series drawn, and the top lists equal the API's.
      await page.goto(`${server.base}/ui/experiments`)
      await page.getByRole("link", { name: SITE }).click()
      await page.waitForURL(new RegExp(`/ui/experiments/analytics/${SITE}$`))
      await page.locator('table[data-list="pages"]').waitFor({ timeout: 20_000 })
      const summary = await readout<Summary>(`/api/analytics/summary?site=${SITE}`)
      assert.isAbove(summary.top_pages.length, 1)
      const row = (label: string, r: Row) => [label, count(r.visitors), count(r.pageviews)]
      assert.deepStrictEqual(
        await shownList(page, "pages"),
        summary.top_pages.map((r) => row(r.page, r))
      )
      assert.deepStrictEqual(
        await shownList(page, "referrers"),
        summary.top_referrers.map((r) => row(r.referrer, r))
      )
      assert.deepStrictEqual(
        await shownList(page, "utm"),
        summary.top_utm_sources.map((r) => row(r.utm_source, r))
      )
      assert.strictEqual(await page.locator(".series polyline").count(), 2)
      await screenshot(page, "analytics", width)
      // Per hour over the last 48 hours: the series is read again, by keyboard (a radio button and Space).
      await page.getByRole("radio", { name: /hour/ }).focus()
      await page.keyboard.press("Space")
      await page.locator("figcaption", { hasText: "per hour" }).waitFor({ timeout: 20_000 })
      assert.strictEqual(await page.locator(".refused").count(), 0)
      assert.strictEqual(await page.locator(".series polyline").count(), 2)
      assert.deepStrictEqual(errors, [])
      await close()
    }, 120_000)
})
