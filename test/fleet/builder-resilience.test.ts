import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type ObjectApiClient, ObjectApiError, redactingLog, resilientClient } from "../support/keel.js"

// Issue 19: a builder outlives a control-plane restart (transient failures retried within a bound), is refused at
// once by a 4xx, and never logs a build secret, even one split across two writes.

const failing = (failures: Array<ObjectApiError>): { client: ObjectApiClient; calls: () => number } => {
  let calls = 0
  const next = <A>(value: A) =>
    Effect.suspend(() => {
      calls++
      const failure = failures.shift()
      return failure === undefined ? Effect.succeed(value) : Effect.fail(failure)
    })
  const head = { key: "k", size: 1, sha256: "0".repeat(64), modifiedAt: 0 }
  return {
    calls: () => calls,
    client: {
      head: () => next(Option.some(head)),
      get: () => next(Option.some(new Uint8Array([1]))),
      getFile: () => next(Option.some({ sha256: "0".repeat(64), size: 1 })),
      put: () => next(head),
      putFile: () => next(head),
      delete: () => next(true),
      list: () => next([head])
    }
  }
}

const unreachable = () => new ObjectApiError({ code: "CONTROL_PLANE_UNREACHABLE", status: 0, detail: "fetch failed" })

describe("the builder's object API calls", () => {
  it.live("retry while the control plane is unreachable or answers 5xx, within their bound", () =>
    Effect.gen(function* () {
      const flaky = failing([unreachable(), new ObjectApiError({ code: "HTTP_503", status: 503, detail: "busy" })])
      const head = yield* resilientClient(flaky.client, "30 seconds").head("k")
      assert.isTrue(Option.isSome(head))
      assert.strictEqual(flaky.calls(), 3)

      const down = failing(Array.from({ length: 100 }, unreachable))
      const gaveUp = yield* Effect.flip(resilientClient(down.client, "1 second").get("k"))
      assert.strictEqual(gaveUp.code, "CONTROL_PLANE_UNREACHABLE")
      assert.isAbove(down.calls(), 1)
    })
  )

  it.live("a refusal fails at once", () =>
    Effect.gen(function* () {
      const refused = failing([new ObjectApiError({ code: "ACTION_NOT_HELD", status: 403, detail: "no" })])
      const error = yield* Effect.flip(resilientClient(refused.client, "30 seconds").put("k", new Uint8Array()))
      assert.strictEqual(error.code, "ACTION_NOT_HELD")
      assert.strictEqual(refused.calls(), 1)
    })
  )

  it("the build log never shows a secret, even split across writes", () => {
    const lines: Array<string> = []
    const log = redactingLog((text) => void lines.push(text), ["s3cr3t-value"])
    log.write("token: s3cr")
    log.write("3t-value and more\npartial s3cr3t-")
    log.write("value")
    log.flush()
    assert.strictEqual(lines.join(""), "token: [redacted] and more\npartial [redacted]")
  })
})
