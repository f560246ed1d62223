import { assert, describe, it } from "@effect/vitest"
import { ftsMatch, textQuery } from "../../src/services/groundtruth/TextSearch.js"
import { tsQueryText } from "../../src/services/groundtruth/TextSearchPg.js"
import { snippetOf } from "../../src/services/groundtruth/TextSnippet.js"

describe("text search queries and snippets", () => {
  it("one query, two engines: FTS5 quotes each word, PostgreSQL makes a word of several tokens a phrase", () => {
    const all = textQuery('max_body_size "hooks" NEAR(a) -x*', "all")!
    assert.strictEqual(ftsMatch(all), '"max_body_size" "hooks" "NEAR" "a" "x"')
    assert.strictEqual(tsQueryText(all), "(max <-> body <-> size) & hooks & near & a & x")
    const any = textQuery("Install the CLI", "any", (w) => w === "the")!
    assert.strictEqual(ftsMatch(any), '"install" OR "cli"')
    assert.strictEqual(tsQueryText(any), "install | cli")
    assert.isUndefined(textQuery('"*()-', "all"))
  })

  it("a snippet is the 24-token window around the query's words, '…' where the text goes on", () => {
    const text = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ")
    // Hits at tokens 30 and 31: the window centres them (tokens 19..42).
    const middle = snippetOf(text, [
      { at: 30, word: "a" },
      { at: 31, word: "b" }
    ])
    assert.strictEqual(middle, `…${Array.from({ length: 24 }, (_, i) => `w${i + 19}`).join(" ")}…`)
    // Near the end, the window stops at the last token and keeps the text after it.
    assert.strictEqual(snippetOf(`${text}.`, [{ at: 59, word: "a" }]).endsWith("w58 w59."), true)
    // A short text is whole, with what precedes its first token.
    assert.strictEqual(snippetOf("# Install it", [{ at: 1, word: "it" }]), "# Install it")
    // No hit: the start of the text.
    assert.strictEqual(snippetOf(text, []), `${Array.from({ length: 24 }, (_, i) => `w${i}`).join(" ")}…`)
  })
})
