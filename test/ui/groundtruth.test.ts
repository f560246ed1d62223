import type { ChildProcess } from "node:child_process"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { citationHref, gitShow, lineRange } from "../../src/ui/pages/groundtruth/links.js"
import { dashboardServer, launchBrowser, openPage, screenshot, WIDTHS } from "../support/browser.js"

// Issue 46: the ground-truth page (/ui/groundtruth) against `ctl serve` with the demo data (Keel's own docs
// ingested): what it shows for a search and for a question is the API's own answer for the same query, every
// citation with its repository, path, commit and lines; a question the sources do not cover reads "not covered".
const children: Array<ChildProcess> = []
let browser: Browser
let server: Awaited<ReturnType<typeof dashboardServer>>

const QUERY = "fenced lease"
const QUESTION = "What is a fenced lease?"
const NOT_COVERED = "How do I tune the QUOKKAFLUX capacitor for Zanzibar?"

interface Cited {
  readonly repo: string
  readonly path: string
  readonly commit: string
  readonly line: number
  readonly end_line: number
}

const getJson = async <A>(path: string, init?: RequestInit): Promise<A> => {
  const response = await fetch(`${server.base}${path}`, init)
  assert.strictEqual(response.status, 200, `${path}: ${response.status}`)
  return (await response.json()) as A
}
const search = (q: string) =>
  getJson<{ hits: ReadonlyArray<Cited> }>(`/search?q=${encodeURIComponent(q)}`).then((result) => result.hits)
const ask = (question: string) =>
  getJson<{ missing: boolean; answer: string | null; citations: ReadonlyArray<Cited & { supports: boolean }> }>(
    "/ask",
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ question }) }
  )

/** What the page shows of each citation in a list: repository, path, lines and commit as text, and its link. */
const shownCitations = (page: Page, list: string) =>
  page.locator(`${list} .citation`).evaluateAll((nodes) =>
    nodes.map((node) => ({
      repo: node.querySelector(".cite-repo")?.textContent ?? "",
      path: node.querySelector(".cite-path")?.textContent ?? "",
      lines: node.querySelector(".cite-lines")?.textContent ?? "",
      commit: node.querySelector(".cite-commit")?.textContent ?? "",
      href: node.querySelector("a.cite-link")?.getAttribute("href") ?? null,
      command: node.querySelector(".cite-command")?.textContent ?? null
    }))
  )

const expected = (cited: ReadonlyArray<Cited>, urls: ReadonlyMap<string, string>) =>
  cited.map((c) => ({
    repo: c.repo,
    path: c.path,
    lines: lineRange(c),
    commit: c.commit,
    href: citationHref(c, urls.get(c.repo)) ?? null,
    command: citationHref(c, urls.get(c.repo)) === undefined ? gitShow(c, urls.get(c.repo)) : null
  }))

beforeAll(async () => {
  ;[browser, server] = await Promise.all([launchBrowser(), dashboardServer(children)])
  // The demo ingests Keel's own docs on the first start; wait (bounded) until the query finds them.
  const deadline = Date.now() + 120_000
  while ((await search(QUERY).catch(() => [])).length === 0) {
    if (Date.now() > deadline) throw new Error(`the demo docs were not searchable within 120 s:\n${server.logs()}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}, 240_000)

afterAll(async () => {
  await browser?.close()
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
})

describe("the ground-truth page", () => {
  for (const width of WIDTHS)
    it(`at ${width} px: search and ask show the API's citations; an uncovered question reads "not covered"`, async () => {
      const urls = new Map(
        (await getJson<ReadonlyArray<{ name: string; url: string }>>("/repos")).map((repo) => [repo.name, repo.url])
      )
      const { page, errors, close } = await openPage(browser, width)
      await page.goto(`${server.base}/ui/groundtruth`)
      await page.getByRole("heading", { name: "Ground truth", exact: true }).waitFor()

      // Search, by keyboard: type the query and press Enter.
      const hits = await search(QUERY)
      assert.isAbove(hits.length, 0)
      await page.getByRole("searchbox", { name: "Search the sources" }).fill(QUERY)
      await page.getByRole("searchbox", { name: "Search the sources" }).press("Enter")
      await page.locator(".gt-hits .citation").first().waitFor({ timeout: 20_000 })
      assert.deepStrictEqual(await shownCitations(page, ".gt-hits"), expected(hits, urls))

      // Ask a question the docs answer: the citations are the API's, each located by repository, path, commit, lines.
      const answer = await ask(QUESTION)
      assert.isFalse(answer.missing, "the demo docs answer the question")
      assert.isAbove(answer.citations.length, 0)
      await page.getByLabel("Question").fill(QUESTION)
      await page.getByRole("button", { name: "Ask", exact: true }).click()
      await page.locator(".gt-covered .citation").first().waitFor({ timeout: 20_000 })
      const shown = await shownCitations(page, ".gt-covered")
      assert.deepStrictEqual(shown, expected(answer.citations, urls))
      // The demo's source is this checkout (a local path, no web page): its citations say so and give the git command
      // that prints the cited lines; a web source's would be a link to {url}/blob/{commit}/{path}#L{line}-L{end}.
      const first = answer.citations[0]!
      const url = urls.get(first.repo)
      if (citationHref(first, url) === undefined) {
        assert.strictEqual(shown[0]!.href, null)
        assert.include(shown[0]!.command ?? "", `show ${first.commit}:${first.path}`)
        assert.include(shown[0]!.command ?? "", `'${first.line},${first.end_line}p'`)
      } else assert.match(shown[0]!.href ?? "", new RegExp(`/blob/${first.commit}/.*#L${first.line}`))
      await screenshot(page, "groundtruth", width)

      // A question the sources do not cover: "not covered", not an error, and its passages not offered as evidence.
      const uncovered = await ask(NOT_COVERED)
      assert.isTrue(uncovered.missing)
      await page.getByLabel("Question").fill(NOT_COVERED)
      await page.getByLabel("Question").press("Control+Enter")
      await page.locator(".gt-not-covered").waitFor({ timeout: 20_000 })
      assert.include((await page.locator(".gt-not-covered [role=status]").textContent()) ?? "", "Not covered")
      assert.strictEqual(await page.locator(".refused").count(), 0)
      assert.strictEqual(await page.locator(".gt-covered").count(), 0)
      assert.deepStrictEqual(
        await shownCitations(page, ".gt-not-covered"),
        expected(uncovered.citations, urls),
        "the passages examined"
      )
      await screenshot(page, "groundtruth-not-covered", width)
      assert.deepStrictEqual(errors, [])
      await close()
    }, 120_000)
})
