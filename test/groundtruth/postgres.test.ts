import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Answerer } from "../../src/services/groundtruth/Answerer.js"
import { Ingester } from "../../src/services/groundtruth/Ingester.js"
import { Retriever } from "../../src/services/groundtruth/Retriever.js"
import { HttpTest } from "../support/http.js"
import { postgresSkipReason, testDatabaseUrl } from "../support/pg-schema.js"
import { buildCorpus, gitRaw } from "./git-fixture.js"

/**
 * Ground truth on PostgreSQL answers as on SQLite: the same real git repository ingested on each engine, then the
 * same questions searched and asked; every hit and citation is line-exact (lines line..end_line of the cited commit)
 * and they are the same passages, in the same order. The engines' lexical rankings differ in detail (FTS5's bm25
 * and PostgreSQL's tsvector, docs/groundtruth.md), which the reranker absorbs: these questions must not show it.
 */
const corpus = buildCorpus()

const QUESTIONS = [
  "How do I install fastify?",
  "How is a plugin registered?",
  "Which hook runs before the handler?",
  "What keeps plugins apart?",
  "serialization schemas",
  "Can a route handler return a promise?"
]

const cited = (hit: { repo: string; path: string; commit: string; line: number; end_line: number }) =>
  `${hit.repo}/${hit.path}:${hit.line}-${hit.end_line}@${hit.commit}`

/** Ingest, then each question searched and asked: the citations as `repo/path:line-end@commit`. */
const session = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ingested = yield* (yield* Ingester).ingest({})
  const retriever = yield* Retriever
  const answerer = yield* Answerer
  const answers = []
  for (const question of QUESTIONS) {
    const search = yield* retriever.search(question, { limit: 5 })
    const ask = yield* answerer.ask(question, undefined, 3)
    for (const hit of [...search.hits, ...ask.citations]) {
      const lines = gitRaw(corpus.docs, "show", `${hit.commit}:${hit.path}`).split("\n")
      const [row] = yield* sql<{ content: string }>`
        SELECT content FROM gt_chunks WHERE path = ${hit.path} AND line = ${hit.line} AND end_line = ${hit.end_line}`
      assert.strictEqual(row?.content, lines.slice(hit.line - 1, hit.end_line).join("\n"), cited(hit))
    }
    answers.push({
      question,
      search: search.hits.map(cited),
      ask: ask.citations.map(cited),
      missing: ask.missing,
      snippets: search.hits.every((hit) => hit.snippet !== "")
    })
  }
  return { chunks: ingested.sources.map((s) => s.chunks), answers }
})

const onEngine = (env: Record<string, string>, dir: string) =>
  session.pipe(
    Effect.provide(
      HttpTest({
        settings: { dataDir: path.join(corpus.root, dir) },
        env: { GT_REGISTRY_REPO: corpus.registry, ...env }
      })
    )
  )

describe.skipIf(postgresSkipReason !== undefined)("ground truth on PostgreSQL", () => {
  it.effect(
    "ingest, search and ask cite the same line-exact passages as on SQLite",
    () =>
      Effect.gen(function* () {
        // The SQLite run names no test database, so it is SQLite under `npm run test:pg` too.
        const sqlite = yield* onEngine({}, "data-sqlite")
        const pg = yield* onEngine({ KEEL_TEST_DATABASE_URL: testDatabaseUrl }, "data-pg")
        assert.deepStrictEqual(pg.chunks, sqlite.chunks)
        for (const [i, answer] of pg.answers.entries()) {
          assert.isAbove(answer.search.length, 0, answer.question)
          assert.isTrue(answer.snippets, `${answer.question}: every hit has a snippet`)
          assert.deepStrictEqual(answer, sqlite.answers[i], answer.question)
        }
      }),
    { timeout: 120_000 }
  )
})
