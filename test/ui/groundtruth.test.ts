import { type ChildProcess, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { citationHref, gitShow, lineRange } from "../../src/ui/pages/groundtruth/links.js"
import { dashboardServer, launchBrowser, openPage, screenshot, WIDTHS } from "../support/browser.js"
import { root } from "../support/server.js"

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

const getJson = async <A>(route: string, init?: RequestInit, base = server.base): Promise<A> => {
  const response = await fetch(`${base}${route}`, init)
  assert.strictEqual(response.status, 200, `${route}: ${response.status}`)
  return (await response.json()) as A
}
const search = (q: string, base = server.base) =>
  getJson<{ hits: ReadonlyArray<Cited> }>(`/search?q=${encodeURIComponent(q)}`, undefined, base).then(
    (result) => result.hits
  )
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

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=Keel", "-c", "user.email=keel@localhost", "-C", cwd, ...args], {
    stdio: "ignore"
  })

describe("the ground-truth page, a source with a web URL", () => {
  // A source cloned over HTTP (git's dumb protocol, from a static file server) has a web URL, so each citation is a
  // link to {url}/blob/{commit}/{path}#L{line}-L{end_line}, the form GitHub and GitLab answer.
  it("each citation links to its file at the cited commit and lines", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-ui-gt-web-"))
    const work = path.join(dir, "work")
    fs.mkdirSync(path.join(work, "docs"), { recursive: true })
    for (const file of ["leases.md", "groundtruth.md"])
      fs.copyFileSync(path.join(root, "docs", file), path.join(work, "docs", file))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "docs")
    git(dir, "clone", "-q", "--bare", work, path.join(dir, "keel.git"))
    git(path.join(dir, "keel.git"), "update-server-info")
    const files = http.createServer((request, response) => {
      const file = path.join(dir, decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname))
      if (!file.startsWith(`${dir}${path.sep}`) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        response.writeHead(404).end()
        return
      }
      response.writeHead(200).end(fs.readFileSync(file))
    })
    await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(files.address() as AddressInfo).port}/keel.git`
    const registry = path.join(dir, "registry")
    fs.mkdirSync(registry)
    fs.writeFileSync(
      path.join(registry, "sources.yml"),
      `version: 1\nsources:\n  - name: keel-web\n    url: ${url}\n    owner: keel\n    trust: canonical\n    include: ['docs/**/*.md']\n`
    )
    git(registry, "init", "-q")
    git(registry, "add", "sources.yml")
    git(registry, "commit", "-q", "-m", "registry")
    const web = await dashboardServer(children, { GT_REGISTRY_REPO: registry })
    try {
      const ingest = await fetch(`${web.base}/ingest/repo`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}"
      })
      assert.strictEqual(ingest.status, 200, await ingest.clone().text())
      const hits = await search(QUERY, web.base)
      assert.isAbove(hits.length, 0)
      const { page, errors, close } = await openPage(browser, 1440)
      await page.goto(`${web.base}/ui/groundtruth`)
      await page
        .getByRole("heading", { name: "Ground truth", exact: true })
        .waitFor({ timeout: 20_000 })
        .catch((error: unknown) => {
          throw new Error(`the page did not render: ${String(error)}; console: ${errors.join(" | ")}`)
        })
      await page.getByRole("searchbox", { name: "Search the sources" }).fill(QUERY)
      await page.getByRole("button", { name: "Search", exact: true }).click()
      await page.locator(".gt-hits a.cite-link").first().waitFor({ timeout: 20_000 })
      const shown = await shownCitations(page, ".gt-hits")
      assert.deepStrictEqual(shown, expected(hits, new Map([["keel-web", url]])))
      const first = hits[0]!
      assert.strictEqual(
        shown[0]!.href,
        `${url.replace(/\.git$/, "")}/blob/${first.commit}/${first.path}#L${first.line}-L${first.end_line}`
      )
      // The link is a real one: reachable by Tab, opening in a new tab.
      const link = page.locator(".gt-hits a.cite-link").first()
      assert.strictEqual(await link.getAttribute("target"), "_blank")
      await link.focus()
      assert.isTrue(await link.evaluate((node) => node === node.ownerDocument.activeElement))
      await screenshot(page, "groundtruth-web-source", 1440)
      assert.deepStrictEqual(errors, [])
      await close()
    } finally {
      web.child.kill("SIGTERM")
      files.close()
    }
  }, 180_000)
})
