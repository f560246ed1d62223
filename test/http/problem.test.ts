import { assert, describe, it } from "@effect/vitest"
import { codeFromTag, problemType, statusTitle, toProblemBody } from "keel"

describe("problem bodies", () => {
  it("codes are the tag in UPPER_SNAKE", () => {
    assert.strictEqual(codeFromTag("LeaseHeld"), "LEASE_HELD")
    assert.strictEqual(codeFromTag("HttpApiDecodeError"), "HTTP_API_DECODE_ERROR")
    assert.strictEqual(codeFromTag("SLIPPAGE_EXCEEDED"), "SLIPPAGE_EXCEEDED")
    assert.strictEqual(problemType("PAYLOAD_TOO_LARGE"), "urn:keel:problem:payload-too-large")
    assert.strictEqual(statusTitle(413), "Content Too Large")
  })

  it("a typed error keeps its fields and uses its own code and detail when it has them", () => {
    const body = toProblemBody(
      409,
      { _tag: "TradeRefused", code: "SLIPPAGE_EXCEEDED", detail: "got 9, wanted 10" },
      "x"
    )
    assert.deepStrictEqual(body, {
      _tag: "TradeRefused",
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
    assert.strictEqual(body.code, "VALIDATION_FAILED")
    assert.strictEqual(body.detail, "amount: Expected number; (root): is missing")
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

  it("a code that is not UPPER_SNAKE is not trusted", () => {
    assert.strictEqual(toProblemBody(409, { _tag: "LeaseHeld", code: "oops" }, "x").code, "LEASE_HELD")
  })
})
