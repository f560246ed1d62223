import { assert, describe, it } from "@effect/vitest"
import {
  codeFromTag,
  parserRefusal,
  parserRefusalResponse,
  problemType,
  statusTitle,
  toProblemBody
} from "../support/keel.js"

describe("problem bodies", () => {
  it("codes are the tag in UPPER_SNAKE", () => {
    assert.strictEqual(codeFromTag("LeaseHeld"), "LEASE_HELD")
    assert.strictEqual(codeFromTag("HttpApiDecodeError"), "HTTP_API_DECODE_ERROR")
    assert.strictEqual(codeFromTag("SLIPPAGE_EXCEEDED"), "SLIPPAGE_EXCEEDED")
    assert.strictEqual(problemType("PAYLOAD_TOO_LARGE"), "urn:keel:problem:payload-too-large")
    // The title is the reason phrase of Node's status line.
    assert.strictEqual(statusTitle(413), "Payload Too Large")
    assert.strictEqual(statusTitle(422), "Unprocessable Entity")
  })

  it("a typed error keeps its own fields, code and detail; its class name and message stay inside", () => {
    const body = toProblemBody(
      409,
      { _tag: "TradeRefused", code: "SLIPPAGE_EXCEEDED", detail: "got 9, wanted 10", message: "got 9", ticker: "SAGE" },
      "x"
    )
    assert.deepStrictEqual(body, {
      ticker: "SAGE",
      type: "urn:keel:problem:slippage-exceeded",
      title: "Conflict",
      status: 409,
      detail: "got 9, wanted 10",
      code: "SLIPPAGE_EXCEEDED"
    })
  })

  it("a decode error becomes VALIDATION_FAILED naming each field", () => {
    const body = toProblemBody(
      400,
      {
        _tag: "HttpApiDecodeError",
        message: "long tree",
        issues: [
          { _tag: "Type", path: ["amount"], message: "Expected number" },
          { _tag: "Missing", path: [], message: "is missing" }
        ]
      },
      "x"
    )
    assert.deepStrictEqual(body, {
      type: "urn:keel:problem:validation-failed",
      title: "Bad Request",
      status: 400,
      detail: "amount: Expected number (and 1 more)",
      code: "VALIDATION_FAILED",
      errors: [
        { path: "amount", message: "Expected number" },
        { path: "", message: "is missing" }
      ]
    })
  })

  it("an empty body gets the status's default code and the fallback detail", () => {
    assert.deepStrictEqual(toProblemBody(404, undefined, "no route for GET /x"), {
      type: "urn:keel:problem:not-found",
      title: "Not Found",
      status: 404,
      detail: "no route for GET /x",
      code: "NOT_FOUND"
    })
    assert.strictEqual(toProblemBody(500, null, "logged").code, "INTERNAL_ERROR")
  })

  it("a 400 describes bad input without quoting it, whatever produced it", () => {
    const typed = toProblemBody(
      400,
      {
        _tag: "BeaconInvalid",
        code: "BEACON_INVALID",
        detail:
          'schema: Expected "keel.beacon/v1", actual "tok; en: secret"; host: is missing; n: Expected number, actual {"a":"x; y: z"}'
      },
      "x"
    )
    assert.strictEqual(typed.detail, 'schema: Expected "keel.beacon/v1"; host: is missing; n: Expected number')
    const decoded = toProblemBody(
      400,
      {
        _tag: "HttpApiDecodeError",
        message: "…",
        issues: [
          { _tag: "Transformation", path: ["limit"], message: 'Unable to decode "s3cret \\" into a x" into a number' }
        ]
      },
      "x"
    )
    assert.strictEqual(decoded.detail, "limit: Unable to decode the value into a number")
    assert.notInclude(JSON.stringify(decoded), "s3cret")
    // Other statuses keep their detail as written (a 409 may well say what was asked and what was found).
    assert.strictEqual(toProblemBody(409, { _tag: "X", detail: "got 9, actual 10" }, "x").detail, "got 9, actual 10")
  })

  it("the parser-level statuses have their titles and codes", () => {
    assert.strictEqual(statusTitle(431), "Request Header Fields Too Large")
    assert.strictEqual(toProblemBody(431, undefined, "x").code, "REQUEST_HEADER_FIELDS_TOO_LARGE")
    assert.strictEqual(toProblemBody(408, undefined, "x").code, "REQUEST_TIMEOUT")
    const answer = parserRefusalResponse({ code: "HPE_HEADER_OVERFLOW" })
    assert.match(answer, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
    assert.include(answer, "\r\nContent-Type: application/problem+json\r\n")
    assert.include(answer, "\r\nConnection: close\r\n")
    const body = answer.slice(answer.indexOf("\r\n\r\n") + 4)
    assert.include(answer, `\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`)
    assert.strictEqual(JSON.parse(body).code, "REQUEST_HEADER_FIELDS_TOO_LARGE")
    assert.strictEqual(parserRefusal({ code: "HPE_SOMETHING_NEW" }).code, "BAD_REQUEST")
    assert.strictEqual(parserRefusal({}).status, 400)
  })

  it("a code that is not UPPER_SNAKE is not trusted", () => {
    assert.strictEqual(toProblemBody(409, { _tag: "LeaseHeld", code: "oops" }, "x").code, "LEASE_HELD")
  })
})
