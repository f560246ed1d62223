import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { HttpTest } from "../support/http.js"
import { Retriever } from "../support/keel.js"
import { serveFakeEmbeddings } from "./fake-embeddings.js"
import { commitFiles, initRepo } from "./git-fixture.js"

// "mobile" and "phone" are one word to this model: a question can reach a passage it shares no word with
// only through the vectors.
const fake = await serveFakeEmbeddings(
  ["phone", "network", "page", "local", "install", "package", "npm", "build", "files", "dist"],
  () => 0.01
)

const root = fs.mkdtempSync(path.join(os.tmpdir(), "keel-gt-embed-"))
const docs = initRepo(root, "docs")
commitFiles(
  docs,
  {
    "guide/network.md": "# Network\n\nOpen the page on your phone over the local network.\n",
    "guide/install.md": "# Install\n\nRun npm install to add the package.\n",
    "guide/build.md": "# Build\n\nThe build writes files to dist.\n"
  },
  "docs"
)
const registry = initRepo(root, "registry")
commitFiles(registry, { "sources.yml": "version: 1\nsources:\n  - { name: docs, url: ../docs }\n" }, "registry")

const call = (method: "GET" | "POST", url: string, body?: unknown) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = method === "GET" ? HttpClientRequest.get(url) : HttpClientRequest.post(url)
    if (body !== undefined) request = HttpClientRequest.bodyUnsafeJson(request, body)
    const response = yield* client.execute(request)
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped)

const vectorRows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ n: number }>`SELECT count(*) AS n FROM gt_vectors WHERE model = 'fake-10'`
)

layer(
  HttpTest({
    settings: { dataDir: path.join(root, "data") },
    env: { GT_REGISTRY_REPO: registry, GT_EMBEDDINGS_URL: fake.url, GT_EMBEDDINGS_MODEL: "fake-10" }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("dense retrieval through an embeddings server", (it) => {
  it.effect("ingest stores a vector per chunk; a question sharing no word with its passage finds it by vector", () =>
    Effect.gen(function* () {
      const { body, status } = yield* call("POST", "/ingest/repo", {})
      assert.strictEqual(status, 200)
      const source = body.sources[0]
      assert.strictEqual(source.chunks, 3)
      assert.strictEqual(source.vectors_computed, 3)
      assert.isNull(source.embedding_error)
      assert.strictEqual((yield* vectorRows)[0]?.n, 3)
      const found = yield* call("GET", "/search?q=mobile")
      assert.strictEqual(found.status, 200)
      assert.strictEqual(found.body.hits[0]?.path, "guide/network.md")
      // The question itself went to the server too.
      assert.include(fake.inputs, "mobile")
    })
  )

  it.effect("re-ingest after a commit embeds only the changed chunks; the others keep their vectors", () =>
    Effect.gen(function* () {
      fake.inputs.length = 0
      commitFiles(docs, { "guide/build.md": "# Build\n\nThe build writes minified files to dist.\n" }, "edit build")
      const { body } = yield* call("POST", "/ingest/repo", {})
      assert.strictEqual(body.sources[0].files_indexed, 1)
      assert.strictEqual(body.sources[0].vectors_computed, 1)
      assert.deepStrictEqual(fake.inputs.length, 1)
      assert.include(fake.inputs[0], "minified")
      // Vectors are kept by content digest: the old build.md vector stays beside the new one.
      assert.strictEqual((yield* vectorRows)[0]?.n, 4)
    })
  )

  it.effect(
    "a failing embeddings server: ingest indexes lexically and says so; questions answer lexically with a warning",
    () =>
      Effect.gen(function* () {
        fake.failing = true
        commitFiles(docs, { "guide/install.md": "# Install\n\nRun npm install to add the package globally.\n" }, "edit")
        const ingested = yield* call("POST", "/ingest/repo", {})
        assert.strictEqual(ingested.status, 200)
        const source = ingested.body.sources[0]
        assert.isNull(source.error)
        assert.strictEqual(source.files_indexed, 1)
        assert.strictEqual(source.vectors_computed, 0)
        assert.include(source.embedding_error, "503")
        const searched = yield* call("GET", "/search?q=install%20package")
        assert.strictEqual(searched.status, 200)
        assert.strictEqual(searched.body.hits[0]?.path, "guide/install.md")
        const asked = yield* call("POST", "/ask", { question: "How do I install the package?" })
        assert.strictEqual(asked.status, 200)
        assert.strictEqual(asked.body.citations[0]?.path, "guide/install.md")
        const lines: Array<string> = []
        const logger = Logger.make(({ message }) => lines.push(JSON.stringify(message)))
        const hits = yield* Retriever.use((r) => r.retrieve("install package")).pipe(
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
        assert.strictEqual(hits[0]?.path, "guide/install.md")
        assert.isTrue(lines.some((l) => l.includes("embeddings server failed; ranking this question lexically")))
        // Back up: the next ingest fills the vectors that are missing, even with nothing new to index.
        fake.failing = false
        const healed = yield* call("POST", "/ingest/repo", {})
        assert.strictEqual(healed.body.sources[0].files_indexed, 0)
        assert.strictEqual(healed.body.sources[0].vectors_computed, 1)
      })
  )
})
