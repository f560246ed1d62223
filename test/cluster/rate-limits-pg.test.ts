import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { afterAll, assert, describe, it } from "vitest"
import { postgresSkipReason } from "../support/pg-schema.js"
import { admin, runnersFixture } from "../support/runners.js"
import { requestChild } from "../support/server.js"

// Issue 45: "A rate limit of L across two runners allows L of 3L alternated requests." Two `ctl serve` runners on
// one PostgreSQL schema count through the machine's Redis (KEEL_REDIS_URL): the public limit of 10 per client IP
// holds for both ports together, where each runner's own counters would have let 20 through.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

const LIMIT = 10

describe.skipIf(postgresSkipReason !== undefined)("rate limits shared by two runners through Redis", () => {
  it("a public limit of 10 allows 10 of 30 reads alternated between the two ports", async () => {
    const { runner } = await runnersFixture(children, schemas, {
      KEEL_REDIS_URL: "redis://127.0.0.1:6379",
      KEEL_REDIS_PREFIX: `keel-test:${randomBytes(6).toString("hex")}:`,
      MARKET_RATE_LIMIT_PUBLIC: String(LIMIT)
    })
    const servers = await Promise.all([runner(0), runner(1)])
    const statuses: Array<number> = []
    for (let i = 0; i < 3 * LIMIT; i++) {
      const answer = await requestChild(servers[i % 2]!.port, { method: "GET", path: "/api/tokens" })
      statuses.push(answer.status)
    }
    assert.strictEqual(statuses.filter((status) => status === 200).length, LIMIT, statuses.join(" "))
    assert.strictEqual(statuses.filter((status) => status === 429).length, 2 * LIMIT, statuses.join(" "))
    // The first ten were allowed, whichever port: one counter, not two.
    assert.deepStrictEqual(
      statuses.slice(0, LIMIT),
      Array.from({ length: LIMIT }, () => 200)
    )
  }, 180_000)
})
