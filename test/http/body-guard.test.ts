import * as Net from "node:net"
import { HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { HttpTest, type RawResponse, rawRequest } from "../support/http.js"
import { jsonTooDeep, MAX_JSON_DEPTH, makeJsonDepthScanner } from "../support/keel.js"

// Fleet hardening (item 5): bodies nested too deep are refused before any decoding, on every route;
// a body over the limit is 413 whatever the method; Node's parser refusals are problems too.

const LIMIT = 64 * 1024
const SITE = "guard-site"

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`

const serverPort = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? server.address.port : 0
)

const assertProblem = (response: RawResponse, status: number, code: string) => {
  assert.strictEqual(response.status, status, response.body)
  assert.strictEqual(response.headers["content-type"], "application/problem+json")
  const body = JSON.parse(response.body) as Record<string, unknown>
  assert.strictEqual(body.status, status)
  assert.strictEqual(body.code, code)
  assert.strictEqual(body.type, `urn:keel:problem:${code.toLowerCase().replace(/_/g, "-")}`)
  assert.isString(body.title)
  assert.isString(body.detail)
  return body
}

/** One request over a plain socket with a Content-Length body (or a chunked one). */
const send = (
  method: string,
  path: string,
  body: string,
  options: { readonly contentType?: string; readonly chunked?: boolean } = {}
) =>
  Effect.flatMap(serverPort, (port) => {
    const framing = options.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${Buffer.byteLength(body)}`
    const head =
      `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${options.contentType ?? "application/json"}\r\n` +
      `${framing}\r\nConnection: close\r\n\r\n`
    const parts = options.chunked
      ? [...chunks(body, 4096).map((part) => `${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`), "0\r\n\r\n"]
      : [body]
    return rawRequest(port, head, parts)
  })

/** A Content-Length request whose body is written in `pieces`, 100 ms apart. */
const inPieces = (port: number, method: string, path: string, pieces: ReadonlyArray<string>) =>
  rawRequest(
    port,
    `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(pieces.join(""))}\r\nConnection: close\r\n\r\n`,
    pieces,
    { pauseMillis: 100 }
  )

const chunks = (text: string, size: number) => {
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** Every route of every surface that takes a JSON body, with the method it takes it on. */
const JSON_ROUTES: ReadonlyArray<readonly [method: string, path: string]> = [
  ["POST", "/v1/vault/token"],
  ["POST", "/ask"],
  ["POST", "/ingest/repo"],
  ["POST", "/api/analytics/web/collect"],
  ["POST", "/api/analytics/mobile/collect"],
  ["POST", "/api/onboarding/events"],
  ["PUT", "/api/host-health"],
  ["POST", "/api/tokens/ANY/buy"],
  ["POST", "/api/tokens/ANY/sell"],
  ["POST", "/api/chat"]
]

describe("the JSON depth scanner", () => {
  it("allows 64 levels and refuses the 65th, for arrays and objects alike", () => {
    assert.strictEqual(MAX_JSON_DEPTH, 64)
    assert.isFalse(jsonTooDeep(nested(64)))
    assert.isTrue(jsonTooDeep(nested(65)))
    assert.isFalse(jsonTooDeep(nestedObjects(64)))
    assert.isTrue(jsonTooDeep(nestedObjects(65)))
    // Depth is nesting, not the number of brackets: siblings do not add up.
    assert.isFalse(jsonTooDeep(`[${Array.from({ length: 1000 }, () => nested(64)).join(",")}]`, 65))
  })

  it("skips string contents, escaped quotes and backslashes included", () => {
    assert.isFalse(jsonTooDeep(JSON.stringify({ s: "[".repeat(10_000) })))
    // `\"` does not end the string: the brackets after it are still inside it.
    assert.isFalse(jsonTooDeep(JSON.stringify({ s: `\\"${"{".repeat(100)}` })))
    assert.isFalse(jsonTooDeep(JSON.stringify([`"${"[".repeat(100)}`])))
    // `\\` is a whole escape: the quote after it ends the string, and the brackets after that count.
    assert.isTrue(jsonTooDeep(`["\\\\", ${nested(65)}]`))
    assert.isTrue(jsonTooDeep(`{"k\\"[": ${nested(64)}}`))
    // Astral characters, lone surrogates (escaped) and NUL inside strings are just string bytes.
    const text = JSON.stringify({ s: `😀${"[".repeat(70)}\u0000\ud800` })
    assert.include(text, "\\ud800")
    assert.isFalse(jsonTooDeep(text))
  })

  it("streams: fed byte by byte it answers as for the whole text, escapes split across chunks included", () => {
    for (const text of [nested(65), JSON.stringify({ s: `\\"${"[".repeat(100)}` }), `["\\\\", ${nested(65)}]`]) {
      const scan = makeJsonDepthScanner(64)
      let answer = false
      for (const byte of Buffer.from(text)) answer = scan(Uint8Array.of(byte))
      assert.strictEqual(answer, jsonTooDeep(text), text.slice(0, 40))
    }
  })

  it("is linear and never recurses: a million levels are counted without a stack overflow", () => {
    assert.isTrue(jsonTooDeep("[".repeat(1_000_000)))
    assert.isFalse(jsonTooDeep("[".repeat(1_000_000), 2_000_000))
  })
})

/** The web collector's own limit here, below the other routes' LIMIT, so a route read as another one shows. */
const WEB_COLLECT_LIMIT = 16 * 1024

layer(
  HttpTest({
    settings: { bodyLimitBytes: LIMIT },
    env: { KEEL_COLLECT_SITES: SITE, KEEL_COLLECT_WEB_BODY_LIMIT: String(WEB_COLLECT_LIMIT) }
  }),
  {
    timeout: "60 seconds"
  }
)("the body guard", (it) => {
  it.effect("a ~6 KB body of nested arrays is 400 JSON_TOO_DEEP on every JSON route of every surface", () =>
    Effect.gen(function* () {
      for (const [method, path] of JSON_ROUTES) {
        const response = yield* send(method, path, nested(3000))
        const body = assertProblem(response, 400, "JSON_TOO_DEEP")
        assert.include(String(body.detail), "64")
        assert.strictEqual(body.max_depth, 64)
        assert.strictEqual(response.headers.connection, "close")
      }
    })
  )

  it.effect("nested objects, chunked bodies and the collectors' text/plain are refused the same way", () =>
    Effect.gen(function* () {
      assertProblem(yield* send("POST", "/ask", nestedObjects(500)), 400, "JSON_TOO_DEEP")
      assertProblem(yield* send("POST", "/v1/vault/token", nested(3000), { chunked: true }), 400, "JSON_TOO_DEEP")
      const beacon = yield* send("POST", "/api/analytics/web/collect", `{"site_id":"${SITE}","events":${nested(80)}}`, {
        contentType: "text/plain;charset=UTF-8"
      })
      assertProblem(beacon, 400, "JSON_TOO_DEEP")
      // The server keeps serving.
      const health = yield* send("GET", "/api/health", "")
      assert.strictEqual(health.status, 200)
    })
  )

  it.effect(
    "a JSON body that is not UTF-8 is INVALID_JSON, never stored with U+FFFD in place; split characters pass",
    () =>
      Effect.gen(function* () {
        const port = yield* serverPort
        const head = (length: number) =>
          `POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`
        const invalid = Buffer.concat([
          Buffer.from('{"question":"a'),
          Buffer.from([0xc3, 0x28, 0xff]),
          Buffer.from('"}')
        ])
        const refused = assertProblem(yield* rawRequest(port, head(invalid.length), [invalid]), 400, "INVALID_JSON")
        assert.strictEqual(refused.detail, "request body is not valid JSON")
        // Cut off in the middle of a character at the end of the body.
        const cut = Buffer.concat([Buffer.from('{"question":"a"}'), Buffer.from([0xe2, 0x82])])
        assertProblem(yield* rawRequest(port, head(cut.length), [cut]), 400, "INVALID_JSON")
        // A valid character split across two writes (and so, often, two chunks) is fine: the route answers.
        const euro = Buffer.from('{"question":"how much is 5 € in coin?"}')
        const at = euro.indexOf(0xe2) + 1
        const split = yield* rawRequest(port, head(euro.length), [euro.subarray(0, at), euro.subarray(at)], {
          pauseMillis: 100
        })
        assert.notInclude(split.body, "INVALID_JSON")
        assert.strictEqual(split.status, 200, split.body)
        // A four-byte character cut after each of its bytes, in chunked framing.
        const emoji = Buffer.from('{"question":"what does 😀 mean?"}')
        const start = emoji.indexOf(0xf0)
        const pieces = [1, 2, 3].map((n, i) => emoji.subarray(i === 0 ? 0 : start + i, start + n))
        pieces.push(emoji.subarray(start + 3))
        const chunkedHead =
          "POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        const framed = [
          ...pieces.map((piece) =>
            Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
          ),
          Buffer.from("0\r\n\r\n")
        ]
        const chunkedSplit = yield* rawRequest(port, chunkedHead, framed, { pauseMillis: 50 })
        assert.strictEqual(chunkedSplit.status, 200, chunkedSplit.body)
      })
  )

  it.effect("nesting up to the limit, and brackets inside strings, reach the route's own schema", () =>
    Effect.gen(function* () {
      assertProblem(yield* send("POST", "/ask", nested(64)), 400, "VALIDATION_FAILED")
      assertProblem(yield* send("POST", "/api/analytics/web/collect", nested(64)), 400, "MALFORMED_BATCH")
      const question = yield* send("POST", "/ask", JSON.stringify({ question: `what is ${"[".repeat(1500)}` }))
      assert.strictEqual(question.status, 200, question.body)
      const batch = yield* send(
        "POST",
        "/api/analytics/web/collect",
        JSON.stringify({
          site_id: SITE,
          events: [{ event_id: "g-1", name: "[".repeat(150), timestamp: 1, visitor_id: "v" }]
        })
      )
      assert.strictEqual(batch.status, 202, batch.body)
      assert.strictEqual(JSON.parse(batch.body).accepted, 1)
    })
  )

  it.effect("a GET with a body over the limit is 413 like a POST, declared or chunked", () =>
    Effect.gen(function* () {
      const big = "x".repeat(LIMIT + 1)
      for (const [method, path] of [
        ["GET", "/api/health"],
        ["GET", "/health"],
        ["GET", "/api/public/blog/keel"],
        ["POST", "/ask"]
      ] as const) {
        for (const chunked of [false, true]) {
          const response = yield* send(method, path, big, { chunked })
          const body = assertProblem(response, 413, "PAYLOAD_TOO_LARGE")
          assert.strictEqual(body.limit_bytes, LIMIT)
        }
      }
      // A GET's deep body is refused like any other.
      assertProblem(yield* send("GET", "/api/health", nested(100)), 400, "JSON_TOO_DEEP")
    })
  )

  it.effect(
    "a query string that is not valid percent-encoded UTF-8 is 400, on every surface, fast paths included",
    () =>
      Effect.gen(function* () {
        for (const path of [
          "/api/experiments/assign?app=demo&platform=ios&surface=onboarding&subject=inv%zz",
          "/api/experiments/assign?app=demo&platform=ios&surface=onboarding&subject=inv%E9",
          "/api/public/blog/news?page=%",
          "/api/coin/history?period=1h%2",
          "/search?q=100%"
        ]) {
          const body = assertProblem(yield* send("GET", path, ""), 400, "VALIDATION_FAILED")
          assert.deepStrictEqual(
            body.errors,
            [{ path: "", message: "the query string is not valid percent-encoded UTF-8 (a literal % is %25)" }],
            path
          )
        }
        // A literal % sent as %25 reaches the route.
        assert.strictEqual((yield* send("GET", "/api/health?x=100%25", "")).status, 200)
      })
  )

  it.effect("a body within the limit that the route never reads is received and the answer is the route's", () =>
    Effect.gen(function* () {
      // Larger than a stream's buffer, so that an unread body would stall the connection.
      const body = JSON.stringify({ pad: "y".repeat(48 * 1024) })
      for (const chunked of [false, true]) {
        const health = yield* send("GET", "/api/health", body, { chunked })
        assert.strictEqual(health.status, 200, health.body)
        // Refused before the body is decoded (no credentials): the refusal, not a stall or a reset.
        assertProblem(yield* send("POST", "/api/chat", body, { chunked }), 401, "UNAUTHORIZED")
      }
    })
  )

  it.effect(
    "a small body that arrives in pieces is awaited whole: the route gets all of it, or the guard refuses it",
    () =>
      Effect.gen(function* () {
        const port = yield* serverPort
        const question = JSON.stringify({ question: "what is the limit?" })
        const answered = yield* inPieces(port, "POST", "/ask", [question.slice(0, 9), question.slice(9)])
        assert.strictEqual(answered.status, 200, answered.body)
        const deep = nested(100)
        assertProblem(yield* inPieces(port, "POST", "/ask", [deep.slice(0, 50), deep.slice(50)]), 400, "JSON_TOO_DEEP")
        // A route that does not read its body still answers after the whole body has arrived.
        const health = yield* inPieces(port, "GET", "/api/health", ['{"a":', "1}"])
        assert.strictEqual(health.status, 200, health.body)
      })
  )

  it.effect("good requests keep their connection alive, with and without a body", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const answers = yield* pipelined(port, [
        "GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n",
        'GET /api/health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 7\r\n\r\n{"a":1}',
        `POST /ask HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"question":"what?"}`,
        "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
      ])
      assert.deepStrictEqual(answers, [200, 200, 200, 200])
    })
  )

  it.effect("form-encoded bodies are 415 (an empty or truncated multipart one was never answered)", () =>
    Effect.gen(function* () {
      const whole = '--b\r\nContent-Disposition: form-data; name="question"\r\n\r\nwhat?\r\n--b--\r\n'
      for (const body of ["", "--b", "--b\r\n", whole]) {
        for (const chunked of [false, true]) {
          const response = yield* send("POST", "/ask", body, {
            contentType: "multipart/form-data; boundary=b",
            chunked
          })
          assertProblem(response, 415, "UNSUPPORTED_MEDIA_TYPE")
        }
      }
      // As a form, a JSON text is one field named after the whole body, which a refusal would then quote.
      const beacon = yield* send("PUT", "/api/host-health", JSON.stringify({ host: "s3cr3t" }), {
        contentType: "application/x-www-form-urlencoded"
      })
      assertProblem(beacon, 415, "UNSUPPORTED_MEDIA_TYPE")
      assert.notInclude(beacon.body, "s3cr3t")
      assertProblem(
        yield* send("POST", "/ask", "question=what", { contentType: "application/x-www-form-urlencoded" }),
        415,
        "UNSUPPORTED_MEDIA_TYPE"
      )
    })
  )

  it.effect("Node's parser refusals are answered in the problem shape, then the connection is closed", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const cases: ReadonlyArray<readonly [head: string, status: number, code: string]> = [
        ["POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "BAD_REQUEST"],
        ["POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef", 400, "BAD_REQUEST"],
        [
          "POST /ask HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
          400,
          "BAD_REQUEST"
        ],
        [
          `GET /api/health HTTP/1.1\r\nHost: x\r\nX-Padding: ${"p".repeat(20_000)}\r\n\r\n`,
          431,
          "REQUEST_HEADER_FIELDS_TOO_LARGE"
        ]
      ]
      for (const [head, status, code] of cases) {
        const response = yield* rawRequest(port, head)
        const body = assertProblem(response, status, code)
        assert.strictEqual(response.headers.connection, "close")
        assert.strictEqual(Number(response.headers["content-length"]), Buffer.byteLength(response.body))
        assert.notInclude(String(body.detail), "abc")
      }
      // What Node answered itself with an empty body (or not at all) is a problem too.
      for (const [head, status, code] of [
        ["GET /api/health HTTP/1.1\r\n\r\n", 400, "BAD_REQUEST"],
        ["GET /api/health HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n", 417, "EXPECTATION_FAILED"],
        ["CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400, "BAD_REQUEST"]
      ] as const) {
        const response = yield* rawRequest(port, head)
        assertProblem(response, status, code)
        assert.strictEqual(response.headers.connection, "close", head)
      }
      const http10 = yield* rawRequest(port, "GET /api/health HTTP/1.0\r\n\r\n")
      assert.strictEqual(http10.status, 200, "HTTP/1.0 needs no Host")
      const health = yield* send("GET", "/api/health", "")
      assert.strictEqual(health.status, 200)
    })
  )

  it.effect("a JSON body declared as anything but application/json is 415, except on the collectors", () =>
    Effect.gen(function* () {
      const question = JSON.stringify({ question: "what is a lease?" })
      for (const contentType of ["text/plain", "application/vnd.api+json", "text/plain; x=application/json"]) {
        const response = yield* send("POST", "/ask", question, { contentType })
        const body = assertProblem(response, 415, "UNSUPPORTED_MEDIA_TYPE")
        assert.include(String(body.detail), "application/json")
      }
      // Parameters of the JSON type are fine (the route answers; its own refusal is not a 415).
      const withCharset = yield* send("POST", "/ask", "{}", { contentType: "application/json; charset=utf-8" })
      assert.notStrictEqual(withCharset.status, 415)
      // sendBeacon's text/plain still reaches the collector, which reads JSON whatever the type.
      const beacon = yield* send(
        "POST",
        "/api/analytics/web/collect",
        JSON.stringify({ site_id: SITE, events: [{ event_id: "ct-1", name: "page_view", visitor_id: "v" }] }),
        { contentType: "text/plain;charset=UTF-8" }
      )
      assert.strictEqual(beacon.status, 202, beacon.body)
    })
  )

  it.effect("another spelling of a path (trailing or doubled slash, upper case) meets the same limits", () =>
    Effect.gen(function* () {
      // The router answers these spellings on the same route: the guard must read them the same way.
      const events = Array.from({ length: 100 }, (_, i) => ({ event_id: `spell-${i}`, name: "x".repeat(200) }))
      const big = JSON.stringify({ site_id: SITE, events })
      assert.isAbove(Buffer.byteLength(big), WEB_COLLECT_LIMIT)
      assert.isBelow(Buffer.byteLength(big), LIMIT)
      for (const path of [
        "/api/analytics/web/collect",
        "/api/analytics/web/collect/",
        "/API/Analytics/Web/Collect",
        "/api//analytics/web/collect",
        "/api/analytics/web/%63ollect",
        // A full URL in the request line, as clients speaking to a forward proxy send it.
        "http://localhost/api/analytics/web/collect"
      ]) {
        const body = assertProblem(yield* send("POST", path, big), 413, "PAYLOAD_TOO_LARGE")
        assert.strictEqual(body.limit_bytes, WEB_COLLECT_LIMIT, path)
      }
    })
  )

  it.effect("the collector's 400s say what is wrong without quoting the body", () =>
    Effect.gen(function* () {
      const client = yield* HttpClient.HttpClient
      const post = (text: string) =>
        client
          .execute(
            HttpClientRequest.post("/api/analytics/web/collect").pipe(
              HttpClientRequest.bodyText(text, "application/json")
            )
          )
          .pipe(
            Effect.flatMap((response) => Effect.map(response.json, (body) => body as Record<string, unknown>)),
            Effect.scoped
          )
      const notJson = yield* post('{"site_id": "s3cr3t-token-value", ')
      assert.strictEqual(notJson.code, "INVALID_JSON")
      assert.strictEqual(notJson.detail, "request body is not valid JSON")
      const wrong = yield* post('{"site_id": 424242, "events": "s3cr3t-token-value"}')
      assert.strictEqual(wrong.code, "MALFORMED_BATCH")
      assert.include(String(wrong.detail), "site_id")
      assert.notInclude(JSON.stringify(wrong), "s3cr3t")
      assert.notInclude(JSON.stringify(wrong), "424242")
    })
  )
})

/** The statuses of the complete HTTP/1.1 responses at the start of `data` (Content-Length or chunked framing). */
const completeResponses = (data: Buffer) => {
  const statuses: Array<number> = []
  let at = 0
  for (;;) {
    const headEnd = data.indexOf("\r\n\r\n", at)
    if (headEnd < 0) return statuses
    const head = data.subarray(at, headEnd).toString("latin1")
    const status = Number(head.split(" ")[1])
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)
    let end = headEnd + 4
    if (length) {
      end += Number(length[1])
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      for (;;) {
        const lineEnd = data.indexOf("\r\n", end)
        if (lineEnd < 0) return statuses
        const size = Number.parseInt(data.subarray(end, lineEnd).toString("latin1"), 16)
        end = lineEnd + 2 + size + 2
        if (size === 0) break
      }
    }
    if (end > data.length) return statuses
    statuses.push(status)
    at = end
  }
}

/** Sends requests one after the other on one connection, as a keep-alive client does; the status of each answer. */
const pipelined = (port: number, requests: ReadonlyArray<string>) =>
  Effect.async<Array<number>, Error>((resume) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    let received = Buffer.alloc(0)
    let sent = 1
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk])
      const answered = completeResponses(received).length
      if (answered === sent && sent < requests.length) socket.write(requests[sent++]!)
    })
    socket.on("error", (error) => resume(Effect.fail(error)))
    socket.on("close", () => resume(Effect.succeed(completeResponses(received))))
    socket.on("connect", () => socket.write(requests[0]!))
    return Effect.sync(() => socket.destroy())
  })
