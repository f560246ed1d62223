import { assert, describe, it } from "@effect/vitest"
import { Either, ParseResult, Schema } from "effect"
import { ReconcileQuery } from "../../src/contracts/fleet/Handoff.js"

// Issue 43: the reconcile path's query rules are a Schema; each refusal's message is the 400 detail the hand-written
// parser answered (docs/handoff.md, "Endpoints"), the first rule broken in the same order.

const decode = (method: "GET" | "POST", query: Record<string, Array<string>>) => {
  const result = Schema.decodeUnknownEither(ReconcileQuery(method))(query)
  return Either.isRight(result) ? result.right : ParseResult.ArrayFormatter.formatErrorSync(result.left)[0]?.message
}

describe("ReconcileQuery", () => {
  it("decodes exactly target, transaction and phase, the phase fitting the method", () => {
    assert.deepStrictEqual(decode("GET", { target: ["forge-1"], transaction: ["t-1"], phase: ["status"] }), {
      target: "forge-1",
      transaction: "t-1",
      phase: "status"
    })
    assert.deepStrictEqual(decode("POST", { phase: ["run"], target: ["forge-1"], transaction: ["t.2"] }), {
      target: "forge-1",
      transaction: "t.2",
      phase: "run"
    })
  })

  it("answers the first broken rule, with the same words as before", () => {
    const ok = { target: ["forge-1"], transaction: ["t"], phase: ["status"] }
    const cases: Array<[method: "GET" | "POST", query: Record<string, Array<string>>, detail: string]> = [
      ["GET", { target: ["x"], extra: ["1"] }, 'unknown query field "extra": only target, transaction, phase'],
      [
        "GET",
        { [`x${"y".repeat(200)}`]: ["1"] },
        `unknown query field ${JSON.stringify(`x${"y".repeat(200)}`).slice(0, 80)}: only target, transaction, phase`
      ],
      ["GET", { transaction: ["t"], phase: ["status"] }, "target is required"],
      ["GET", { ...ok, target: ["a", "b"] }, "target is given 2 times"],
      ["GET", { ...ok, target: [""] }, "target is empty"],
      ["GET", { target: ["a"], phase: ["status"] }, "transaction is required"],
      ["GET", { target: ["a"], transaction: ["../x"] }, "phase is required"],
      [
        "GET",
        { ...ok, transaction: ["../x"] },
        "transaction must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
      ],
      ["GET", { ...ok, phase: ["stop"] }, "phase must be one of status, run, resume, rollback, finalize"],
      ["GET", { ...ok, phase: ["run"] }, "GET takes phase=status; run is a POST"],
      ["POST", ok, "phase=status is a GET"]
    ]
    for (const [method, query, detail] of cases)
      assert.strictEqual(decode(method, query), detail, JSON.stringify(query))
  })
})
