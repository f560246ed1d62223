import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { buildCorpus, commitFiles, git, gitRaw, README } from "./git-fixture.js"

const corpus = buildCorpus()
const TOKEN = "gt-test-token"

const call = (method: "GET" | "POST", url: string, body?: unknown, token: string | null = TOKEN) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = method === "GET" ? HttpClientRequest.get(url) : HttpClientRequest.post(url)
    if (token !== null) request = HttpClientRequest.bearerToken(request, token)
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const response = yield* client.execute(request)
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped)

const ingest = (body: Record<string, string> = {}) => call("POST", "/ingest/repo", body)

interface ChunkRow {
  id: number
  repo: string
  path: string
  commit_sha: string
  line: number
  end_line: number
  content: string
}
const chunks = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<ChunkRow>`SELECT * FROM gt_chunks ORDER BY id`)

/** Every stored chunk is exactly lines line..end_line of `git show COMMIT:PATH`. */
const assertCitationsExact = (rows: ReadonlyArray<ChunkRow>) => {
  for (const row of rows) {
    const lines = gitRaw(corpus.docs, "show", `${row.commit_sha}:${row.path}`).split("\n")
    assert.strictEqual(row.content, lines.slice(row.line - 1, row.end_line).join("\n"), `${row.path}:${row.line}`)
  }
}

layer(
  HttpTest({
    settings: { dataDir: path.join(corpus.root, "data") },
    env: {
      GT_REGISTRY_REPO: corpus.registry,
      GT_TOKENS: TOKEN,
      GT_MAX_FILE_BYTES: "4096",
      GT_CHUNK_MAX_LINES: "6",
      GT_CHUNK_OVERLAP_LINES: "1"
    }
  }),
  { timeout: "120 seconds", excludeTestServices: true }
)("ground-truth ingestion", (it) => {
  it.effect("ingests enabled sources at their branch with line-exact citations, counting each skip", () =>
    Effect.gen(function* () {
      const { body, status } = yield* ingest()
      assert.strictEqual(status, 200)
      assert.strictEqual(body.sources.length, 1) // the transcript source is disabled by default
      const fastify = body.sources[0]
      assert.strictEqual(fastify.repo, "fastify")
      assert.strictEqual(fastify.commit, corpus.commits[1])
      assert.isNull(fastify.previous_commit)
      assert.isNull(fastify.error)
      assert.deepStrictEqual(fastify.skipped, { binary: 1, too_large: 1, symlink: 1, not_a_file: 0 })
      assert.strictEqual(fastify.files_indexed, 5) // README, plugins, removed, old-name, package.json
      const rows = yield* chunks
      const paths = [...new Set(rows.map((r) => r.path))].sort()
      assert.deepStrictEqual(paths, [
        "README.md",
        "docs/guide/plugins.md",
        "docs/old-name.md",
        "docs/removed.md",
        "package.json"
      ])
      assertCitationsExact(rows)
    })
  )

  it.effect("search answers cited hits; headings and trust shape the score", () =>
    Effect.gen(function* () {
      const { body, status } = yield* call("GET", "/search?q=preHandler%20hook")
      assert.strictEqual(status, 200)
      const hit = body.hits[0]
      assert.strictEqual(hit.repo, "fastify")
      assert.strictEqual(hit.path, "README.md")
      assert.strictEqual(hit.heading, "Fastify docs > Routes > Hooks")
      assert.strictEqual(hit.trust, "canonical")
      const lines = README.split("\n")
      assert.include(lines.slice(hit.line - 1, hit.end_line).join("\n"), "preHandler")
      assert.strictEqual(hit.commit, corpus.commits[1])
      assert.isAbove(hit.score, 0)
      const scoped = yield* call("GET", "/search?q=preHandler%20hook&repo=fastify")
      assert.strictEqual(scoped.body.hits[0]?.path, "README.md")
      const unknown = yield* call("GET", "/search?q=x&repo=nope")
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(unknown.body.code, "UNKNOWN_REPO")
    })
  )

  it.effect("any user text is safe: 1,000 random queries, no 5xx", () =>
    Effect.gen(function* () {
      const alphabet = [
        '"',
        "*",
        "(",
        ")",
        "-",
        "+",
        ":",
        "^",
        "NEAR",
        "AND",
        "OR",
        "NOT",
        " ",
        "é",
        "東",
        "x",
        "'",
        "\\",
        "{",
        "}",
        "%",
        "\u0000"
      ]
      let seed = 42
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31
        return seed
      }
      for (let i = 0; i < 1000; i++) {
        const q = Array.from({ length: 1 + (next() % 8) }, () => alphabet[next() % alphabet.length]).join("")
        const { status } = yield* call("GET", `/search?q=${encodeURIComponent(q)}`)
        assert.isBelow(status, 500, `query ${JSON.stringify(q)}`)
      }
    })
  )

  it.effect("re-ingest after a commit rewrites only the changed file's chunks; deletions and renames follow", () =>
    Effect.gen(function* () {
      const before = yield* chunks
      const third = commitFiles(
        corpus.docs,
        {
          "docs/guide/plugins.md":
            "# Plugins\n\nA plugin is registered with fastify.register.\n\nEncapsulation keeps plugins apart.\nDecorators extend the instance.\n",
          "docs/removed.md": null
        },
        "edit plugins, remove legacy"
      )
      git(corpus.docs, "mv", "docs/old-name.md", "docs/new-name.md")
      git(corpus.docs, "commit", "-q", "-m", "rename")
      const fourth = git(corpus.docs, "rev-parse", "HEAD")
      const { body } = yield* ingest({ repo: "fastify" })
      const result = body.sources[0]
      assert.strictEqual(result.previous_commit, corpus.commits[1])
      assert.strictEqual(result.commit, fourth)
      assert.strictEqual(result.files_indexed, 2) // plugins.md and new-name.md
      const after = yield* chunks
      const untouched = (rows: ReadonlyArray<ChunkRow>) =>
        rows.filter((r) => r.path === "README.md" || r.path === "package.json").map((r) => r.id)
      assert.deepStrictEqual(untouched(after), untouched(before)) // same rows, not rewritten
      assert.isTrue(after.every((r) => r.commit_sha === fourth)) // one commit per source
      const paths = new Set(after.map((r) => r.path))
      assert.isFalse(paths.has("docs/removed.md"))
      assert.isFalse(paths.has("docs/old-name.md"))
      assert.isTrue(paths.has("docs/new-name.md"))
      assertCitationsExact(after)
      assert.notStrictEqual(third, fourth)
      // removed.md and old-name.md left the index; new-name.md came in (not a deletion).
      assert.strictEqual(result.files_deleted, 2)

      // A new file the globs never select, and one over the size limit, were never in the index to leave it.
      commitFiles(
        corpus.docs,
        { "unselected.bin.txt": "x\n", "docs/huge.md": `# Huge\n${"word ".repeat(2000)}\n` },
        "noise"
      )
      const noise = (yield* ingest({ repo: "fastify" })).body.sources[0]
      assert.strictEqual(noise.files_deleted, 0)
      assert.strictEqual(noise.files_indexed, 0)
    })
  )

  it.effect("limit=1 answers the first hit of a longer search, with its snippet", () =>
    Effect.gen(function* () {
      const ten = (yield* call("GET", "/search?q=fastify&limit=10")).body
      const one = (yield* call("GET", "/search?q=fastify&limit=1")).body
      assert.isAbove(ten.hits.length, 1)
      assert.strictEqual(one.hits.length, 1)
      assert.deepStrictEqual(one.hits[0], ten.hits[0])
      assert.isNotEmpty(one.hits[0].snippet)
    })
  )

  it.effect("a search during an ingest sees the old commit or the new one, never a mix", () =>
    Effect.gen(function* () {
      const before = (yield* chunks)[0]?.commit_sha
      const edits: Record<string, string> = {}
      for (let i = 0; i < 40; i++)
        edits[`docs/bulk/page-${i}.md`] = `# Page ${i}\n\nThe plugin system handles page ${i}.\n`
      const next = commitFiles(corpus.docs, edits, "many pages")
      const seen = new Set<string>()
      const searches = Effect.gen(function* () {
        for (let i = 0; i < 30; i++) {
          const { body } = yield* call("GET", "/search?q=plugin&limit=50")
          const commits = new Set<string>(body.hits.map((h: { commit: string }) => h.commit))
          assert.isAtMost(commits.size, 1, `one search saw ${[...commits].join(", ")}`)
          for (const c of commits) seen.add(c)
        }
      })
      const [, result] = yield* Effect.all([searches, ingest({ repo: "fastify" })], { concurrency: "unbounded" })
      assert.strictEqual(result.body.sources[0].commit, next)
      for (const commit of seen) assert.include([before, next], commit)
    })
  )

  it.effect("an unreachable repository fails that source and its previous index keeps serving", () =>
    Effect.gen(function* () {
      const commit = (yield* chunks)[0]?.commit_sha
      commitFiles(
        corpus.registry,
        { "sources.yml": corpus.sources().replace("url: ../fastify\n    owner", "url: ../nowhere\n    owner") },
        "break the url"
      )
      const { body } = yield* ingest({ repo: "fastify" })
      // The mirror of the old URL is not reused for a new URL: this source now points nowhere.
      assert.isNotNull(body.sources[0].error)
      assert.isNull(body.sources[0].commit)
      const search = yield* call("GET", "/search?q=plugin")
      assert.isAbove(search.body.hits.length, 0)
      assert.strictEqual(search.body.hits[0].commit, commit)
      commitFiles(corpus.registry, { "sources.yml": corpus.sources() }, "fix the url")
      const fixed = yield* ingest({ repo: "fastify" })
      assert.isNull(fixed.body.sources[0].error)
    })
  )

  it.effect("an invalid registry is refused with a precise message and the last good one stays in force", () =>
    Effect.gen(function* () {
      commitFiles(
        corpus.registry,
        { "sources.yml": corpus.sources("  - name: fastify\n    url: ../fastify\n    trust: gold\n") },
        "bad"
      )
      const { body } = yield* ingest()
      assert.include(body.registry_refused, "sources.2.name: fastify is listed twice")
      assert.include(body.registry_refused, "gold is not a tier")
      assert.strictEqual(body.sources[0].repo, "fastify")
      assert.isNull(body.sources[0].error)
      commitFiles(corpus.registry, { "sources.yml": corpus.sources() }, "good again")
    })
  )

  it.effect("/repos lists the sources with what is indexed; credentials never shown", () =>
    Effect.gen(function* () {
      const { body, status } = yield* call("GET", "/repos")
      assert.strictEqual(status, 200)
      const fastify = body.find((r: { name: string }) => r.name === "fastify")
      assert.strictEqual(fastify.trust, "canonical")
      assert.strictEqual(fastify.description, "The web framework's guides and reference")
      assert.deepStrictEqual(fastify.owners, ["web-platform-team"])
      assert.isTrue(fastify.enabled)
      assert.match(fastify.indexed_commit, /^[0-9a-f]{40}$/)
      assert.isAbove(fastify.chunks, 0)
      const transcripts = body.find((r: { name: string }) => r.name === "call-transcripts")
      assert.isNull(transcripts.description)
      assert.isFalse(transcripts.enabled)
      assert.strictEqual(transcripts.kind, "transcript")
    })
  )

  it.effect("every endpoint but /health needs the bearer token", () =>
    Effect.gen(function* () {
      for (const [method, url] of [
        ["GET", "/repos"],
        ["GET", "/search?q=x"],
        ["POST", "/ingest/repo"]
      ] as const) {
        const denied = yield* call(method, url, method === "POST" ? {} : undefined, null)
        assert.strictEqual(denied.status, 401)
        assert.strictEqual(denied.body.code, "UNAUTHORIZED")
        assert.strictEqual((yield* call(method, url, method === "POST" ? {} : undefined, "wrong")).status, 401)
      }
      assert.strictEqual((yield* call("GET", "/health", undefined, null)).status, 200)
    })
  )
})
