import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { NOT_COVERED } from "../support/keel.js"
import { buildCorpus } from "./git-fixture.js"

interface FakeRequest {
  readonly url: string | undefined
  readonly auth: string | undefined
  readonly body: { model: string; messages: Array<{ role: string; content: string }> }
}

/** A local OpenAI-compatible chat-completions server whose answer each test sets. */
const fakeLlm = await new Promise<{
  url: string
  reply: { status: number; content: string }
  requests: Array<FakeRequest>
}>((resolve) => {
  const state = { url: "", reply: { status: 200, content: "" }, requests: [] as Array<FakeRequest> }
  const server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => {
      body += c
    })
    req.on("end", () => {
      state.requests.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) })
      res.writeHead(state.reply.status, { "content-type": "application/json" })
      res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: state.reply.content } }] }))
    })
  })
  server.listen(0, "127.0.0.1", () => {
    state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
    server.unref()
    resolve(state)
  })
})

const ask = (question: string, repos?: Array<string>, k?: number) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post("/ask").pipe(
        HttpClientRequest.bodyUnsafeJson({ question, scope: repos ? { repos } : {}, ...(k === undefined ? {} : { k }) })
      )
    )
    return { status: response.status, body: (yield* response.json) as any }
  }).pipe(Effect.scoped)

const ingestAll = Effect.gen(function* () {
  const client = yield* HttpClient.HttpClient
  const response = yield* client.execute(
    HttpClientRequest.post("/ingest/repo").pipe(HttpClientRequest.bodyUnsafeJson({}))
  )
  assert.strictEqual(response.status, 200)
}).pipe(Effect.scoped)

const extractiveCorpus = buildCorpus()
layer(
  HttpTest({
    settings: { dataDir: path.join(extractiveCorpus.root, "data") },
    env: { GT_REGISTRY_REPO: extractiveCorpus.registry }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("POST /ask without a language model", (it) => {
  it.effect("answers extractively: cited passages, no composed prose", () =>
    Effect.gen(function* () {
      yield* ingestAll
      const { body, status } = yield* ask("How do I install fastify?")
      assert.strictEqual(status, 200)
      assert.strictEqual(body.mode, "extractive")
      assert.isNull(body.answer)
      assert.isFalse(body.missing)
      assert.isAbove(body.citations.length, 0)
      const first = body.citations[0]
      assert.deepStrictEqual(Object.keys(first).sort(), [
        "commit",
        "end_line",
        "line",
        "path",
        "repo",
        "snippet",
        "supports"
      ])
      assert.strictEqual(first.path, "README.md")
      assert.isTrue(body.citations.every((c: { supports: boolean }) => c.supports === true))
    })
  )

  it.effect("k bounds the citations (default 5, 1..20)", () =>
    Effect.gen(function* () {
      const many = yield* ask("fastify plugins hooks routes install", undefined, 20)
      assert.isAbove(many.body.citations.length, 1)
      assert.isAtMost(many.body.citations.length, 20)
      const one = yield* ask("fastify plugins hooks routes install", undefined, 1)
      assert.strictEqual(one.body.citations.length, 1)
      assert.deepStrictEqual(one.body.citations[0], many.body.citations[0])
      const tooMany = yield* ask("fastify", undefined, 21)
      assert.strictEqual(tooMany.status, 400)
      assert.strictEqual(tooMany.body.code, "VALIDATION_FAILED")
    })
  )

  it.effect("a question naming what no indexed passage holds is not covered, however well its other words match", () =>
    Effect.gen(function* () {
      const { body } = yield* ask("How do I install fastify on Heroku?")
      assert.isTrue(body.missing)
      assert.strictEqual(body.answer, NOT_COVERED)
    })
  )

  it.effect("a not-covered answer still cites the passages it examined, each marked supports: false", () =>
    Effect.gen(function* () {
      const covered = yield* ask("How do I install fastify?", undefined, 2)
      const { body } = yield* ask("How do I install fastify on Heroku?", undefined, 2)
      assert.isTrue(body.missing)
      assert.strictEqual(body.citations.length, 2)
      assert.isTrue(body.citations.every((c: { supports: boolean }) => c.supports === false))
      // The same passages, fields and order a covered answer cites: only `supports` tells them apart.
      assert.deepStrictEqual(
        body.citations.map((c: { path: string; line: number; commit: string }) => `${c.path}:${c.line}@${c.commit}`),
        covered.body.citations.map(
          (c: { path: string; line: number; commit: string }) => `${c.path}:${c.line}@${c.commit}`
        )
      )
    })
  )

  it.effect(
    "a question whose distinctive words no examined passage holds is not covered, though its common words match",
    () =>
      Effect.gen(function* () {
        // Every word is ordinary (no identifier, version or capitalised name) and "route", "handler" match well:
        // only the fitted rule (uncovered and absent idf mass) tells that the passages do not answer it.
        const { body } = yield* ask("How do I rotate the route handler logs every week?")
        assert.isTrue(body.missing)
        assert.isAbove(body.citations.length, 0)
        assert.isTrue(body.citations.every((c: { supports: boolean }) => c.supports === false))
        assert.isFalse((yield* ask("How do I declare a route with a handler?")).body.missing)
      })
  )

  it.effect("says plainly when the sources do not cover the question, with empty citations", () =>
    Effect.gen(function* () {
      const { body } = yield* ask("What is the airspeed velocity of an unladen swallow?")
      assert.deepStrictEqual(body, { mode: "extractive", answer: NOT_COVERED, missing: true, citations: [] })
      const unknown = yield* ask("install", ["nope"])
      assert.strictEqual(unknown.status, 404)
    })
  )
})

const generatedCorpus = buildCorpus()
layer(
  HttpTest({
    settings: { dataDir: path.join(generatedCorpus.root, "data") },
    env: {
      GT_REGISTRY_REPO: generatedCorpus.registry,
      GT_LLM_BASE_URL: fakeLlm.url,
      GT_LLM_MODEL: "test-model",
      GT_LLM_API_KEY: "sk-test-secret"
    }
  }),
  { timeout: "60 seconds", excludeTestServices: true }
)("POST /ask with a language model", (it) => {
  it.effect("the model gets numbered sources; its [n] markers become citations, renumbered in citing order", () =>
    Effect.gen(function* () {
      yield* ingestAll
      fakeLlm.reply = { status: 200, content: "Run npm install fastify [1]; Node 20 is needed [1]. See also [9]." }
      const { body } = yield* ask("How do I install fastify?")
      assert.strictEqual(body.mode, "generated")
      assert.isFalse(body.missing)
      assert.strictEqual(body.answer, "Run npm install fastify [1]; Node 20 is needed [1]. See also.")
      assert.strictEqual(body.citations.length, 1)
      const request = fakeLlm.requests.at(-1)!
      assert.strictEqual(request.url, "/v1/chat/completions")
      assert.strictEqual(request.auth, "Bearer sk-test-secret")
      assert.strictEqual(request.body.model, "test-model")
      assert.include(request.body.messages[1]?.content ?? "", "[1] fastify/README.md:")
    })
  )

  it.effect("citations come in the order the answer first cites them, markers renumbered to match", () =>
    Effect.gen(function* () {
      fakeLlm.reply = { status: 200, content: "Nothing." }
      const passages = (yield* ask("How do I install fastify?")).body.citations
      assert.isAtLeast(passages.length, 2)
      fakeLlm.reply = { status: 200, content: "Use [2] first, then [1]; again [2]." }
      const { body } = yield* ask("How do I install fastify?")
      assert.strictEqual(body.answer, "Use [1] first, then [2]; again [1].")
      assert.deepStrictEqual(
        body.citations.map((c: { path: string; line: number }) => `${c.path}:${c.line}`),
        [passages[1], passages[0]].map((c: { path: string; line: number }) => `${c.path}:${c.line}`)
      )
    })
  )

  it.effect("an answer that cites nothing is dropped for the extractive one; so is a failing model", () =>
    Effect.gen(function* () {
      fakeLlm.reply = { status: 200, content: "Fastify is great." }
      const uncited = yield* ask("How do I install fastify?")
      assert.strictEqual(uncited.body.mode, "extractive")
      assert.isNull(uncited.body.answer)
      assert.isAbove(uncited.body.citations.length, 0)
      fakeLlm.reply = { status: 500, content: "" }
      const failed = yield* ask("How do I install fastify?")
      assert.strictEqual(failed.status, 200)
      assert.strictEqual(failed.body.mode, "extractive")
    })
  )

  it.effect("the model may say the sources do not answer; an answer naming what its sources never say is dropped", () =>
    Effect.gen(function* () {
      fakeLlm.reply = { status: 200, content: "NOT_COVERED" }
      const declined = yield* ask("How do I install fastify?")
      assert.strictEqual(declined.body.mode, "generated")
      assert.strictEqual(declined.body.answer, NOT_COVERED)
      assert.isTrue(declined.body.missing)
      // The passages the model was given come back, marked as not supporting an answer.
      assert.isAbove(declined.body.citations.length, 0)
      assert.isTrue(declined.body.citations.every((c: { supports: boolean }) => c.supports === false))
      fakeLlm.reply = { status: 200, content: "Run npm install fastify@9.4.1 with --legacy-peer-deps [1]." }
      const invented = yield* ask("How do I install fastify?")
      assert.strictEqual(invented.body.mode, "extractive")
      assert.isFalse(invented.body.missing)
      assert.isAbove(invented.body.citations.length, 0)
    })
  )

  it.effect("no supporting source: missing, and the model is not asked to invent", () =>
    Effect.gen(function* () {
      const before = fakeLlm.requests.length
      const { body } = yield* ask("What is the airspeed velocity of an unladen swallow?")
      assert.isTrue(body.missing)
      assert.strictEqual(body.answer, NOT_COVERED)
      assert.deepStrictEqual(body.citations, [])
      assert.strictEqual(fakeLlm.requests.length, before)
    })
  )
})
