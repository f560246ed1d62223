import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { HttpTest } from "../support/http.js"
import { Ingester, stems } from "../support/keel.js"
import { buildCorpus, commitFiles, initRepo } from "./git-fixture.js"

const corpus = buildCorpus()
const TOKEN = "gt-scope-token"

const send = (method: "GET" | "POST", url: string, body?: string, token: string | null = TOKEN) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = method === "GET" ? HttpClientRequest.get(url) : HttpClientRequest.post(url)
    if (token !== null) request = HttpClientRequest.bearerToken(request, token)
    if (body !== undefined) request = HttpClientRequest.bodyText(request, body, "application/json")
    const response = yield* client.execute(request)
    return { status: response.status, headers: response.headers, body: (yield* response.json) as any }
  }).pipe(Effect.scoped)

const ingest = (body: Record<string, unknown> = {}) => send("POST", "/ingest/repo", JSON.stringify(body))
const searchRepos = (q: string, limit = 50) =>
  Effect.map(
    send("GET", `/search?q=${encodeURIComponent(q)}&limit=${limit}`),
    (r) => new Set<string>(r.body.hits.map((h: { repo: string }) => h.repo))
  )

/** A second source over the same repository's guides, written into the registry with `extra` keys. */
const guides = (extra = "") => `  - name: guides
    url: ../fastify
    include: ['docs/**/*.md']
${extra}`

/** The stored document frequencies equal a recount over the chunks the index holds. */
const assertFrequenciesExact = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ heading: string; content: string; terms: string }>`
    SELECT heading, content, terms FROM gt_chunks`
  const recount = new Map<string, number>()
  for (const row of rows)
    for (const s of stems(`${row.heading}\n${row.content}\n${row.terms}`)) recount.set(s, (recount.get(s) ?? 0) + 1)
  const stored = yield* sql<{ stem: string; df: number }>`SELECT stem, df FROM gt_terms`
  assert.deepStrictEqual(
    new Map(stored.map((r) => [r.stem, Number(r.df)])),
    recount,
    "gt_terms must count exactly the chunks indexed"
  )
})

layer(
  HttpTest({
    settings: { dataDir: path.join(corpus.root, "data") },
    env: { GT_REGISTRY_REPO: corpus.registry, GT_TOKENS: TOKEN, GT_CHUNK_MAX_LINES: "6", GT_CHUNK_OVERLAP_LINES: "1" }
  }),
  { timeout: "120 seconds", excludeTestServices: true }
)("the registry decides what is served", (it) => {
  it.effect("a disabled source named by an ingest is refused (409 SOURCE_DISABLED) and nothing of it is indexed", () =>
    Effect.gen(function* () {
      const refused = yield* ingest({ repo: "call-transcripts" })
      assert.strictEqual(refused.status, 409)
      assert.strictEqual(refused.body.code, "SOURCE_DISABLED")
      assert.strictEqual(refused.body.repo, "call-transcripts")
      assert.include(refused.body.detail, "disabled")
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM gt_chunks WHERE repo = 'call-transcripts'`
      assert.strictEqual(Number(rows[0]!.n), 0)
    })
  )

  it.effect("a source disabled, then removed, in the registry leaves every answer at the next ingest", () =>
    Effect.gen(function* () {
      commitFiles(corpus.registry, { "sources.yml": corpus.sources(guides()) }, "add guides")
      const first = yield* ingest()
      assert.strictEqual(first.status, 200)
      assert.deepStrictEqual(first.body.sources_removed, [])
      assert.isTrue((yield* searchRepos("plugin encapsulation")).has("guides"))

      commitFiles(corpus.registry, { "sources.yml": corpus.sources(guides("    enabled: false\n")) }, "disable")
      const disabled = yield* ingest({ repo: "fastify" })
      assert.deepStrictEqual(disabled.body.sources_removed, ["guides"])
      assert.isFalse((yield* searchRepos("plugin encapsulation")).has("guides"))
      const ask = yield* send("POST", "/ask", JSON.stringify({ question: "How are plugins kept apart?", k: 20 }))
      assert.notInclude(
        ask.body.citations.map((c: { repo: string }) => c.repo),
        "guides"
      )
      yield* assertFrequenciesExact

      commitFiles(corpus.registry, { "sources.yml": corpus.sources(guides()) }, "enable again")
      yield* ingest()
      assert.isTrue((yield* searchRepos("plugin encapsulation")).has("guides"))

      commitFiles(corpus.registry, { "sources.yml": corpus.sources() }, "remove guides")
      const removed = yield* ingest()
      assert.deepStrictEqual(removed.body.sources_removed, ["guides"])
      assert.isFalse((yield* searchRepos("plugin encapsulation")).has("guides"))
      const repos = yield* send("GET", "/repos")
      assert.notInclude(
        repos.body.map((r: { name: string }) => r.name),
        "guides"
      )
      yield* assertFrequenciesExact
    })
  )

  it.effect("a refused registry retires nothing, even when the one kept in force no longer reads", () =>
    Effect.gen(function* () {
      commitFiles(corpus.registry, { "sources.yml": corpus.sources("# plain\n") }, "plain")
      yield* ingest()
      const sql = yield* SqlClient.SqlClient
      const before = yield* sql<{ n: number }>`SELECT count(*) AS n FROM gt_chunks`
      // The stored registry stops validating (a trust tier removed from the settings, say)…
      const stored = yield* sql<{ text: string }>`SELECT text FROM gt_registry WHERE id = 1`
      yield* sql`UPDATE gt_registry SET text = ${stored[0]!.text.replace("trust: canonical", "trust: gold")} WHERE id = 1`
      // …and the newest one is refused: nothing is in force that could say a source left.
      commitFiles(corpus.registry, { "sources.yml": corpus.sources("  - name: fastify\n    url: ../fastify\n") }, "bad")
      const answer = yield* ingest()
      assert.isNotNull(answer.body.registry_refused)
      assert.deepStrictEqual(answer.body.sources_removed, [])
      const after = yield* sql<{ n: number }>`SELECT count(*) AS n FROM gt_chunks`
      assert.strictEqual(Number(after[0]!.n), Number(before[0]!.n))
      yield* sql`UPDATE gt_registry SET text = ${stored[0]!.text} WHERE id = 1`
    })
  )

  it.effect("a glob change counts the files that left the index as deleted", () =>
    Effect.gen(function* () {
      commitFiles(corpus.registry, { "sources.yml": corpus.sources(guides()) }, "guides again")
      const before = yield* ingest({ repo: "guides" })
      assert.strictEqual(before.body.sources[0].files_indexed, 4) // plugins, removed, old-name, huge
      commitFiles(
        corpus.registry,
        { "sources.yml": corpus.sources(guides("    exclude: ['docs/guide/**']\n")) },
        "narrow the guides"
      )
      const after = yield* ingest({ repo: "guides" })
      assert.strictEqual(after.body.sources[0].files_indexed, 3)
      assert.strictEqual(after.body.sources[0].files_deleted, 1)
      yield* assertFrequenciesExact
    })
  )

  it.effect("concurrent ingests run one after another: every one answers 200 without a source error", () =>
    Effect.gen(function* () {
      // A new repository: the first ingests all clone its mirror at once, and a registry commit to fetch.
      const fresh = initRepo(corpus.root, "fresh")
      commitFiles(fresh, { "README.md": "# Fresh\n\nconcurrency is serialised\n" }, "fresh")
      commitFiles(
        corpus.registry,
        { "sources.yml": corpus.sources(`  - name: fresh\n    url: ../fresh\n`) },
        "a fresh source"
      )
      const results = yield* Effect.all(
        Array.from({ length: 5 }, () => ingest()),
        { concurrency: "unbounded" }
      )
      for (const result of results) {
        assert.strictEqual(result.status, 200)
        for (const source of result.body.sources) assert.isNull(source.error, source.error)
      }
      // One after another: exactly one of them indexed the new source; each later one found it indexed at
      // that commit and had nothing to do (overlapping ingests would each have read it from scratch).
      const answers = results.map((r) => r.body.sources.find((s: { repo: string }) => s.repo === "fresh"))
      const first = answers.filter((s) => s.previous_commit === null)
      assert.lengthOf(first, 1, JSON.stringify(answers))
      assert.strictEqual(first[0].files_indexed, 1)
      for (const later of answers.filter((s) => s.previous_commit !== null)) {
        assert.strictEqual(later.previous_commit, first[0].commit)
        assert.strictEqual(later.files_indexed, 0)
      }
      yield* assertFrequenciesExact
    })
  )

  it.effect("an ingest waits while another is running: it starts only when the first has finished", () =>
    Effect.gen(function* () {
      const ingester = yield* Ingester
      const waiting = initRepo(corpus.root, "waiting")
      commitFiles(waiting, { "README.md": "# Waiting\n\none ingest at a time\n" }, "waiting")
      commitFiles(
        corpus.registry,
        { "sources.yml": corpus.sources("  - name: waiting\n    url: ../waiting\n") },
        "a source to wait on"
      )
      const gate = yield* Deferred.make<void>()
      let firstProgress = false
      // The first ingest stops at its first progress report (before its index swap) until the gate opens.
      const first = yield* Effect.fork(
        ingester.ingest({ repo: "waiting" }, () =>
          Effect.zipRight(
            Effect.sync(() => {
              firstProgress = true
            }),
            Deferred.await(gate)
          )
        )
      )
      for (let i = 0; i < 500 && !firstProgress; i++) yield* Effect.sleep("10 millis")
      assert.isTrue(firstProgress)
      const second = yield* Effect.fork(ingester.ingest({ repo: "waiting" }))
      yield* Effect.sleep("300 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(second)), "the second ingest ran beside the first")
      yield* Deferred.succeed(gate, undefined)
      const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(second)]
      assert.strictEqual(a.sources[0]!.files_indexed, 1)
      assert.strictEqual(b.sources[0]!.previous_commit, a.sources[0]!.commit)
      assert.strictEqual(b.sources[0]!.files_indexed, 0)
    })
  )

  it.effect("limit is how many hits come back when that many passages match, up to 50", () =>
    Effect.gen(function* () {
      const sections = Array.from({ length: 45 }, (_, i) => `# Quasar ${i}\n\nquasar section number ${i}\n`).join("\n")
      commitFiles(corpus.docs, { "docs/quasar.md": sections }, "many sections")
      yield* ingest({ repo: "fastify" })
      const hits = (yield* send("GET", "/search?q=quasar&repo=fastify&limit=50")).body.hits
      assert.strictEqual(hits.length, 45)
      assert.strictEqual((yield* send("GET", "/search?q=quasar&repo=fastify&limit=40")).body.hits.length, 40)
    })
  )
})

layer(
  HttpTest({
    settings: { dataDir: path.join(corpus.root, "data-bodies") },
    env: { GT_REGISTRY_REPO: corpus.registry, GT_TOKENS: TOKEN }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("ground-truth request bodies", (it) => {
  it.effect("an unknown member of /ask or /ingest/repo is refused by name: a misspelt scope never widens it", () =>
    Effect.gen(function* () {
      for (const [url, body, field] of [
        ["/ask", { question: "plugins", repos: ["fastify"] }, "repos"],
        ["/ask", { question: "plugins", scope: { repo: ["fastify"] } }, "scope.repo"],
        ["/ingest/repo", { repo: "fastify", branch: "main" }, "branch"]
      ] as const) {
        const answer = yield* send("POST", url, JSON.stringify(body))
        assert.strictEqual(answer.status, 400, `${url} ${JSON.stringify(body)}`)
        assert.strictEqual(answer.body.code, "VALIDATION_FAILED")
        assert.include(
          answer.body.errors.map((e: { path: string }) => e.path),
          field
        )
      }
    })
  )

  it.effect("an empty scope, an empty ref or repo, and a body that is not an object are 400s in plain words", () =>
    Effect.gen(function* () {
      const empty = yield* send("POST", "/ask", JSON.stringify({ question: "plugins", scope: { repos: [] } }))
      assert.strictEqual(empty.status, 400)
      assert.include(
        empty.body.errors.map((e: { path: string }) => e.path),
        "scope.repos"
      )
      for (const body of [{ ref: "" }, { repo: "" }]) {
        const refused = yield* send("POST", "/ingest/repo", JSON.stringify(body))
        assert.strictEqual(refused.status, 400)
      }
      for (const body of ["null", "[]", "3"]) {
        const refused = yield* send("POST", "/ask", body)
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.body.detail, "(root): must be an object")
      }
    })
  )

  it.effect("a 401 names the scheme it wants (WWW-Authenticate: Bearer)", () =>
    Effect.gen(function* () {
      for (const token of [null, "wrong"]) {
        const denied = yield* send("GET", "/search?q=x", undefined, token)
        assert.strictEqual(denied.status, 401)
        assert.strictEqual(denied.headers["www-authenticate"], 'Bearer realm="keel-groundtruth"')
      }
    })
  )
})

const nowhere = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-gt-nowhere-")), "registry")

layer(
  HttpTest({
    settings: { dataDir: path.join(corpus.root, "data-nowhere") },
    env: { GT_REGISTRY_REPO: nowhere, GT_TOKENS: TOKEN }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("a registry that cannot be fetched", (it) => {
  it.effect("with none ever accepted, an ingest is 503 REGISTRY_UNAVAILABLE, not a refusal of its content", () =>
    Effect.gen(function* () {
      const answer = yield* ingest()
      assert.strictEqual(answer.status, 503)
      assert.strictEqual(answer.body.code, "REGISTRY_UNAVAILABLE")
      // git's own words (paths on the server) stay in the log.
      assert.notInclude(answer.body.detail, nowhere)
      assert.notInclude(answer.body.detail, "fatal")
    })
  )
})
