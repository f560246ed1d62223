import { SqlClient } from "@effect/sql"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest } from "../support/http.js"
import { CoinHistory, Ledger, marketplaceClient, toUnits } from "../support/keel.js"
import { type Answer, call, fundedWallet, launchAgent } from "../support/market.js"
import { decoderFor, type OpenApiSchema } from "../support/openapi.js"

// Issue 22, items 5 and 8: what a strictly typed client meets. The OpenAPI document is the contract
// such a client is generated from, so answers are decoded with a decoder built from that document.

type JsonSchema = OpenApiSchema

const nextLink = (answer: Answer): string | undefined => {
  const header = answer.headers.link
  if (header === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(header)
  assert.isNotNull(match, `a Link header of one rel="next" target: ${header}`)
  return match?.[1]
}

/** Every page of a list, from `first` following Link rel="next" until a page has none. */
const follow = (first: string) =>
  Effect.gen(function* () {
    const pages: Array<Answer> = []
    let next: string | undefined = first
    while (next !== undefined) {
      assert.isBelow(pages.length, 100, "a list ends")
      const answer: Answer = yield* call("GET", next)
      assert.strictEqual(answer.status, 200, next)
      pages.push(answer)
      next = nextLink(answer)
      if (next !== undefined) assert.match(next, /^\/api\//, "the target is relative to the origin called")
    }
    return pages
  })

const openApi = Effect.map(call("GET", "/docs/marketplace/openapi.json"), (answer) => answer.body)

/** The query parameter `name` of GET `path` in the OpenAPI document. */
const parameter = (spec: JsonSchema, path: string, name: string) =>
  (spec.paths[path].get.parameters as ReadonlyArray<JsonSchema>).find((p) => p.name === name)

const problemCode = (answer: Answer) => `${answer.status} ${answer.body.code}`

// A generous public limit: these tests walk many pages from one client address.
layer(HttpTest({ env: { MARKET_RATE_LIMIT_PUBLIC: "100000" } }), { timeout: "60 seconds", excludeTestServices: true })(
  "the marketplace as typed clients meet it",
  (it) => {
    it.effect("runway: always a number, runway_infinite for a zero-burn agent, and the OpenAPI says so", () =>
      Effect.gen(function* () {
        yield* launchAgent("BURNS", { burnRateHourly: "4" })
        yield* launchAgent("IDLE")
        yield* (yield* Ledger).mint("agent:BURNS", toUnits("10"), "funding")
        yield* (yield* Ledger).mint("agent:IDLE", toUnits("10"), "funding")

        const spec = yield* openApi
        const detail = spec.paths["/api/agents/{ticker}"].get.responses["200"].content["application/json"].schema
        const resolved = detail.$ref === undefined ? detail : spec.components.schemas[detail.$ref.split("/").pop()]
        // Exactly what a generated client needs: a required, non-nullable number and a required boolean.
        assert.deepInclude(resolved.required, "runway_hours")
        assert.deepInclude(resolved.required, "runway_infinite")
        assert.strictEqual(resolved.properties.runway_hours.type, "number")
        assert.isUndefined(resolved.properties.runway_hours.anyOf)
        assert.strictEqual(resolved.properties.runway_infinite.type, "boolean")
        assert.match(resolved.properties.runway_hours.description, /1\.7976931348623157e308/)

        const decode = decoderFor(spec.components.schemas)
        const burning = yield* call("GET", "/api/agents/BURNS")
        const idle = yield* call("GET", "/api/agents/IDLE")
        assert.deepStrictEqual(decode(resolved, burning.body), [])
        assert.deepStrictEqual(decode(resolved, idle.body), [])
        assert.strictEqual(burning.body.runway_hours, 2.5) // 10 coin at 4 an hour
        assert.strictEqual(burning.body.runway_infinite, false)
        assert.strictEqual(idle.body.runway_hours, Number.MAX_VALUE)
        assert.strictEqual(idle.body.runway_infinite, true)
        // The sentinel sorts above any real runway and survives a round trip through JSON text.
        assert.strictEqual(JSON.parse(JSON.stringify(idle.body)).runway_hours, Number.MAX_VALUE)

        // The project's own typed client (derived from the same contract) decodes both answers.
        const client = yield* marketplaceClient()
        const typedBurning = yield* client.agents.get({ path: { ticker: "BURNS" } })
        const typedIdle = yield* client.agents.get({ path: { ticker: "IDLE" } })
        assert.strictEqual(typedBurning.runway_hours, 2.5)
        assert.isFalse(typedBurning.runway_infinite)
        assert.strictEqual(typedIdle.runway_hours, Number.MAX_VALUE)
        assert.isTrue(typedIdle.runway_infinite)
        // An error answer (a problem body, no `_tag` on the wire) fails with the class its code names.
        const missing = yield* Effect.flip(client.agents.get({ path: { ticker: "NOPE" } }))
        assert.strictEqual(missing._tag, "AgentNotFound")
        assert.strictEqual((missing as { ticker?: string }).ticker, "NOPE")

        // The list answers decode against their schemas too.
        for (const [path, answer] of [
          ["/api/agents", yield* call("GET", "/api/agents")],
          ["/api/tokens", yield* call("GET", "/api/tokens")],
          ["/api/chat", yield* call("GET", "/api/chat")],
          ["/api/coin/history", yield* call("GET", "/api/coin/history")]
        ] as const) {
          const schema = spec.paths[path].get.responses["200"].content["application/json"].schema
          assert.deepStrictEqual(decode(schema, answer.body), [], path)
        }
      }).pipe(Effect.orDie)
    )

    it.effect("agents: Link rel=next walks the whole list once, in order, stable while agents are added", () =>
      Effect.gen(function* () {
        for (const ticker of ["PGA", "PGB", "PGC", "PGD", "PGE"]) yield* launchAgent(ticker)
        const all = (yield* call("GET", "/api/agents?limit=500")).body.map((a: { ticker: string }) => a.ticker)
        assert.isUndefined((yield* call("GET", "/api/agents?limit=500")).headers.link, "one page: no next")

        const pages = yield* follow("/api/agents?limit=2")
        const walked = pages.flatMap((p) => p.body.map((a: { ticker: string }) => a.ticker))
        assert.deepStrictEqual(walked, all)
        assert.strictEqual(pages.length, Math.ceil(all.length / 2))
        assert.isTrue(pages.slice(0, -1).every((p) => p.body.length === 2))
        assert.match(pages[0]!.headers.link!, /^<\/api\/agents\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/)

        // An agent launched while a client pages appears once, on a later page; nothing repeats.
        const first = yield* call("GET", "/api/agents?limit=2")
        yield* launchAgent("PGLATE")
        const rest = yield* follow(nextLink(first)!)
        const seen = [...first.body, ...rest.flatMap((p) => p.body)].map((a: { ticker: string }) => a.ticker)
        assert.deepStrictEqual(seen, [...all, "PGLATE"])

        // The offset form still answers; its next link is a cursor, not an offset.
        const byOffset = yield* call("GET", "/api/agents?limit=1&offset=1")
        assert.strictEqual(byOffset.body[0].ticker, all[1])
        assert.notInclude(nextLink(byOffset)!, "offset=")
        assert.strictEqual((yield* call("GET", nextLink(byOffset)!)).body[0].ticker, all[2])
      })
    )

    it.effect("tokens: Link rel=next walks the ranking by market cap once, in order", () =>
      Effect.gen(function* () {
        for (const ticker of ["TKA", "TKB", "TKC", "TKD"]) yield* launchAgent(ticker)
        const w = yield* fundedWallet(40)
        for (const [ticker, amount] of [
          ["TKA", 3],
          ["TKB", 1],
          ["TKC", 3], // a tie with TKA: broken by ticker
          ["TKD", 7]
        ] as const) {
          yield* call("POST", `/api/tokens/${ticker}/buy`, { bearer: w.key, body: { user_id: w.address, amount } })
        }
        const all = (yield* call("GET", "/api/tokens?limit=500")).body.map((t: { ticker: string }) => t.ticker)
        const pages = yield* follow("/api/tokens?limit=1")
        assert.deepStrictEqual(
          pages.flatMap((p) => p.body.map((t: { ticker: string }) => t.ticker)),
          all
        )
        assert.strictEqual(pages.length, all.length)
        assert.isBelow(all.indexOf("TKA"), all.indexOf("TKC"))
        assert.isBelow(all.indexOf("TKD"), all.indexOf("TKA"))
      })
    )

    it.effect("chat: Link rel=next pages back with before=<id>, newest first, to the first message", () =>
      Effect.gen(function* () {
        const key = yield* launchAgent("TALKY")
        for (let i = 0; i < 7; i++) {
          const posted = yield* call("POST", "/api/chat", {
            bearer: key,
            body: { message: `line ${i}`, message_type: "chat" }
          })
          assert.strictEqual(posted.status, 201)
        }
        const all = (yield* call("GET", "/api/chat?limit=200")).body.map((m: { id: string }) => m.id)
        const pages = yield* follow("/api/chat?limit=3")
        const walked = pages.flatMap((p) => p.body.map((m: { id: string }) => m.id))
        assert.deepStrictEqual(walked, all)
        assert.deepStrictEqual(
          walked.map(Number),
          [...walked.map(Number)].sort((a, b) => b - a)
        )
        assert.match(pages[0]!.headers.link!, /^<\/api\/chat\?limit=3&before=\d+>; rel="next"$/)
      })
    )

    it.effect("coin history: even sampling is one complete page; sampling=none pages every point by Link", () =>
      Effect.gen(function* () {
        const coin = yield* CoinHistory
        yield* coin.setPrice(toUnits("2"))
        for (let i = 0; i < 6; i++) yield* coin.sample // several points in the same millisecond: ties by insertion
        yield* coin.setPrice(toUnits("4"))

        const even = yield* call("GET", "/api/coin/history?period=1h&limit=3")
        assert.strictEqual(even.body.history.length, 3)
        assert.isUndefined(even.headers.link, "a down-sampled history spans the whole period: no next page")

        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ n: number }>`SELECT count(*) AS n FROM market_coin_prices`
        const whole = yield* call("GET", "/api/coin/history?period=1h&limit=1000&sampling=none")
        assert.strictEqual(whole.body.history.length, Number(stored[0]!.n))
        assert.isUndefined(whole.headers.link)

        const pages = yield* follow("/api/coin/history?period=1h&limit=3&sampling=none")
        assert.deepStrictEqual(
          pages.flatMap((p) => p.body.history),
          whole.body.history
        )
        assert.isAbove(pages.length, 2)
        for (const page of pages) {
          // Every page says the same about the coin now and the period's change.
          assert.deepStrictEqual(page.body.current, whole.body.current)
          assert.strictEqual(page.body.price_change_percent, whole.body.price_change_percent)
        }
        assert.include(pages[0]!.headers.link!, "sampling=none")

        const mixed = yield* call("GET", `${nextLink(pages[0]!)!.replace("sampling=none", "sampling=even")}`)
        assert.strictEqual(problemCode(mixed), "400 INVALID_INPUT")
      }).pipe(Effect.orDie)
    )

    it.effect("limit bounds: every list answers 400 naming them, and the OpenAPI declares them", () =>
      Effect.gen(function* () {
        const spec = yield* openApi
        for (const [path, max, byDefault, cursor] of [
          ["/api/agents", 500, 100, "cursor"],
          ["/api/tokens", 500, 100, "cursor"],
          ["/api/chat", 200, 50, "before"],
          ["/api/coin/history", 1000, 100, "cursor"]
        ] as const) {
          for (const bad of ["0", String(max + 1), "1.5", "ten", "-3"]) {
            const answer = yield* call("GET", `${path}?limit=${bad}`)
            assert.strictEqual(problemCode(answer), "400 VALIDATION_FAILED", `${path} limit=${bad}`)
            assert.include(answer.body.detail, `from 1 to ${max}`, `${path} limit=${bad}`)
          }
          assert.strictEqual((yield* call("GET", `${path}?limit=${max}`)).status, 200)
          const limit = parameter(spec, path, "limit")
          assert.deepInclude(limit.schema, { type: "integer", minimum: 1, maximum: max, default: byDefault }, path)
          assert.isDefined(parameter(spec, path, cursor), `${path} declares its cursor`)
          assert.include(spec.paths[path].get.description, 'rel="next"')
        }
        // A cursor is the server's own: anything else is a 400 naming the parameter, never a 500.
        for (const path of ["/api/agents", "/api/tokens", "/api/coin/history?sampling=none&"]) {
          for (const bad of ["zzz", "eyJ4IjoxfQ", "%00"]) {
            const url = path.endsWith("&") ? `${path}cursor=${bad}` : `${path}?cursor=${bad}`
            const answer = yield* call("GET", url)
            assert.strictEqual(problemCode(answer), "400 VALIDATION_FAILED", url)
            assert.include(answer.body.detail, "cursor", url)
          }
        }
        assert.strictEqual(problemCode(yield* call("GET", "/api/chat?before=abc")), "400 VALIDATION_FAILED")
        // A cursor and an offset at once are ambiguous.
        const first = yield* call("GET", "/api/agents?limit=1")
        const both = yield* call("GET", `${nextLink(first)!}&offset=1`)
        assert.strictEqual(problemCode(both), "400 INVALID_INPUT")
        const tokens = yield* call("GET", "/api/tokens?limit=1")
        if (nextLink(tokens) !== undefined)
          assert.strictEqual(problemCode(yield* call("GET", `${nextLink(tokens)!}&offset=1`)), "400 INVALID_INPUT")
      })
    )
  }
)
