import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest, type RawResponse, rawRequest, throughFastPath } from "../support/http.js"
import { assignFastPath } from "../support/keel.js"
import { serverPort } from "../support/market.js"
import { CLIENT_KEY, registryDir } from "./registry-fixture.js"

// The assignment fast path (src/http/product/AssignFastPath.ts) must answer exactly as the HttpApi route does:
// the same recorded requests go to a server with it and to one without it (each with its own data dir), and
// the answers are compared byte for byte.

interface Recorded {
  readonly label: string
  readonly query: string
  readonly key?: string
}

const ok = "app_id=demo-ios&platform=ios&surface=onboarding"
const recorded: ReadonlyArray<Recorded> = [
  { label: "a subject's assignment", query: `${ok}&subject=user-1`, key: CLIENT_KEY },
  { label: "the same again (sticky)", query: `${ok}&subject=user-1`, key: CLIENT_KEY },
  { label: "another subject", query: `${ok}&subject=user.2_x~y`, key: CLIENT_KEY },
  {
    label: "parameters in another order",
    query: `subject=user-3&surface=onboarding&platform=ios&app_id=demo-ios`,
    key: CLIENT_KEY
  },
  { label: "the rotated key", query: `${ok}&subject=user-4`, key: "pk_test_ios_rotated_key" },
  {
    label: "a journey without an experiment",
    query: "app_id=demo-ios&platform=ios&surface=paywall&subject=u",
    key: CLIENT_KEY
  },
  {
    label: "a surface nobody registered",
    query: "app_id=demo-ios&platform=ios&surface=nowhere&subject=u",
    key: CLIENT_KEY
  },
  {
    label: "another platform",
    query: "app_id=demo-ios&platform=android&surface=onboarding&subject=u",
    key: CLIENT_KEY
  },
  { label: "an unknown app", query: "app_id=nope&platform=ios&surface=onboarding&subject=u", key: CLIENT_KEY },
  { label: "no client key", query: `${ok}&subject=user-1` },
  { label: "a wrong client key", query: `${ok}&subject=user-1`, key: "pk_wrong" },
  { label: "an extra parameter", query: `${ok}&subject=user-1&utm=x`, key: CLIENT_KEY },
  { label: "no subject", query: ok, key: CLIENT_KEY },
  { label: "an empty subject", query: `${ok}&subject=`, key: CLIENT_KEY },
  { label: "a repeated subject", query: `${ok}&subject=a&subject=b`, key: CLIENT_KEY },
  { label: "an escaped subject", query: `${ok}&subject=jos%C3%A9%20m`, key: CLIENT_KEY },
  { label: "a plus in the subject", query: `${ok}&subject=a+b`, key: CLIENT_KEY },
  { label: "a subject too long", query: `${ok}&subject=${"s".repeat(257)}`, key: CLIENT_KEY }
]

const send = (port: number, request: Recorded) =>
  rawRequest(
    port,
    [
      `GET /api/experiments/assign?${request.query} HTTP/1.1`,
      "host: 127.0.0.1",
      ...(request.key === undefined ? [] : [`x-client-key: ${request.key}`]),
      "connection: close",
      "",
      ""
    ].join("\r\n")
  )

const record = (fast: boolean) =>
  Effect.gen(function* () {
    const port = yield* serverPort
    const answers: Array<RawResponse & { label: string }> = []
    for (const request of recorded) answers.push({ label: request.label, ...(yield* send(port, request)) })
    return answers
  }).pipe(
    Effect.provide(HttpTest({ settings: { dataDir: registryDir().dir }, env: { KEEL_FAST_PATHS: String(fast) } }))
  )

const withoutDate = ({ headers: { date: _date, ...headers }, ...answer }: RawResponse & { label: string }) => ({
  ...answer,
  headers
})

describe("the assignment fast path", () => {
  it.effect(
    "answers a recorded set of requests byte for byte as the HttpApi route does",
    () =>
      Effect.gen(function* () {
        const withFastPath = yield* record(true)
        const without = yield* record(false)
        for (const [i, answer] of withFastPath.entries())
          assert.deepStrictEqual(withoutDate(answer), withoutDate(without[i]!), answer.label)
        const statuses = new Set(withFastPath.map((answer) => answer.status))
        for (const status of [200, 400, 401, 404]) assert.isTrue(statuses.has(status), `${status}`)
        assert.deepStrictEqual(JSON.parse(withFastPath[0]!.body), JSON.parse(withFastPath[1]!.body))
      }),
    { timeout: 120_000 }
  )
})

/** Whether the fast path answered an assignment itself or passed it on. */
const through = (query: string, key: string | null = CLIENT_KEY) =>
  Effect.flatMap(assignFastPath, (fastPath) =>
    throughFastPath(
      fastPath,
      new Request(`http://127.0.0.1/api/experiments/assign?${query}`, {
        headers: key === null ? {} : { "x-client-key": key }
      })
    )
  )

layer(HttpTest({ settings: { dataDir: registryDir().dir } }), { timeout: "60 seconds" })(
  "the assignment fast path's reach",
  (it) => {
    it.effect("serves plain queries itself, refusals included, and passes anything else on", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* through(`${ok}&subject=u-1`), { passedOn: false, status: 200 })
        assert.deepStrictEqual(yield* through("app_id=nope&platform=ios&surface=x&subject=u"), {
          passedOn: false,
          status: 404
        })
        assert.deepStrictEqual(yield* through(`${ok}&subject=u-1`, null), { passedOn: false, status: 401 })
        for (const query of [
          ok,
          `${ok}&subject=`,
          `${ok}&subject=a&subject=b`,
          `${ok}&subject=a%20b`,
          `${ok}&subject=a+b`
        ])
          assert.deepStrictEqual(yield* through(query), { passedOn: true, status: 599 })
      })
    )
  }
)
