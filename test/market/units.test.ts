import { assert, describe, it } from "@effect/vitest"
import { canonicalDecimal } from "../support/keel.js"

describe("canonicalDecimal: one text per number, for comparing the numbers of two requests exactly", () => {
  it("writes the same number the same way however it was sent", () => {
    for (const written of ["2", "2.0", "2e0", "0.2E1", "20e-1", "002.000", 2, 2.0]) {
      assert.strictEqual(canonicalDecimal(written), "2e0", String(written))
    }
    assert.strictEqual(canonicalDecimal("500"), "5e2")
    assert.strictEqual(canonicalDecimal("0.000000123"), "123e-9")
    assert.strictEqual(canonicalDecimal("0"), "0")
    assert.strictEqual(canonicalDecimal("0.000e5"), "0")
  })

  it("keeps different numbers apart, beyond what a double holds", () => {
    assert.notStrictEqual(canonicalDecimal("500"), canonicalDecimal("500.0000000001"))
    assert.notStrictEqual(canonicalDecimal("12345678901234567890"), canonicalDecimal("12345678901234567891"))
    assert.notStrictEqual(canonicalDecimal("-2"), canonicalDecimal("2"))
  })
})
