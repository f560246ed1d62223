import { assert, describe, it } from "@effect/vitest"
import {
  chunkFile,
  chunkLines,
  chunkMarkdown,
  ftsQuery,
  isBinary,
  parseSources,
  redactUrls,
  selects,
  splitCredentials
} from "../support/keel.js"

describe("chunking", () => {
  it("markdown is cut at headings, outside code fences, carrying the heading path and exact lines", () => {
    const text = "# A\nintro\n## B\nb text\n```\n# not a heading\n```\n### C\nc text\n## D\nd text\n"
    const chunks = chunkMarkdown(text, { maxLines: 50, overlapLines: 0 })
    assert.deepStrictEqual(
      chunks.map((c) => [c.heading, c.line, c.endLine]),
      [
        ["A", 1, 2],
        ["A > B", 3, 7],
        ["A > B > C", 8, 9],
        ["A > D", 10, 11]
      ]
    )
    assert.strictEqual(chunks[1]?.content, "## B\nb text\n```\n# not a heading\n```")
  })

  it("other text is windowed with overlap; blank windows are dropped; a final newline adds no line", () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`)
    const chunks = chunkLines(lines, 1, "", { maxLines: 4, overlapLines: 1 })
    assert.deepStrictEqual(
      chunks.map((c) => [c.line, c.endLine]),
      [
        [1, 4],
        [4, 7],
        [7, 10]
      ]
    )
    assert.deepStrictEqual(
      chunkFile("a.txt", "x\ny\n", { maxLines: 10, overlapLines: 0 }).map((c) => c.endLine),
      [2]
    )
    assert.deepStrictEqual(chunkLines(["", " "], 1, "", { maxLines: 4, overlapLines: 0 }), [])
  })

  it("a UTF-8 byte-order mark hides no first-line heading or key, and takes no line", () => {
    const options = { maxLines: 10, overlapLines: 0 }
    const markdown = chunkFile("guide.md", "\uFEFF# Install\n\nRun the installer.\n", options)
    assert.strictEqual(markdown[0]?.heading, "Install")
    assert.strictEqual(markdown[0]?.line, 1)
    const json = chunkFile("package.json", '\uFEFF{\n  "name": "x",\n  "version": "1.0.0"\n}\n', options)
    assert.isTrue(
      json.some((c) => c.heading.includes("version") && c.line === 3),
      JSON.stringify(json)
    )
  })

  it("before a long code block the windows still move forward: no one-line windows, every line cited once or in one overlap", () => {
    // A heading, 59 lines of text, then a 50-line fenced block (longer than a window, kept whole).
    const text = [
      "# Sec",
      ...Array.from({ length: 59 }, (_, i) => `text line ${i + 2}`),
      "```js",
      ...Array.from({ length: 48 }, (_, i) => `code(${i})`),
      "```"
    ].join("\n")
    const chunks = chunkMarkdown(text, { maxLines: 40, overlapLines: 5 })
    const ranges = chunks.map((c) => [c.line, c.endLine])
    assert.deepStrictEqual(ranges, [
      [1, 40],
      [36, 60],
      [61, 110]
    ])
    for (const chunk of chunks)
      assert.strictEqual(
        chunk.content,
        text
          .split("\n")
          .slice(chunk.line - 1, chunk.endLine)
          .join("\n")
      )
  })

  it("binary means a NUL byte in the first 8 KB", () => {
    assert.isTrue(isBinary(new Uint8Array([0x89, 0x50, 0, 1])))
    assert.isFalse(isBinary(new TextEncoder().encode("plain text é")))
  })
})

describe("globs and queries", () => {
  it("minimatch globs on repo-relative paths: * skips dotfiles, a pattern without / matches at the root only", () => {
    const source = { include: ["**/*.md", "package.json"], exclude: ["test/**"] }
    assert.isTrue(selects(source, "README.md"))
    assert.isTrue(selects(source, "docs/a/b.md"))
    assert.isTrue(selects(source, "package.json"))
    assert.isFalse(selects(source, "lib/package.json"))
    assert.isFalse(selects(source, "test/x.md"))
    assert.isFalse(selects(source, ".hidden.md"))
  })

  it("user text becomes quoted words only", () => {
    assert.strictEqual(ftsQuery('fastify "hooks" NEAR(a b) -x*', "all"), '"fastify" "hooks" "NEAR" "a" "b" "x"')
    assert.strictEqual(ftsQuery("a b", "any"), '"a" OR "b"')
    assert.isUndefined(ftsQuery('"*()-', "all"))
  })

  it("sources.yml is validated with precise paths", () => {
    const weights = new Map([
      ["canonical", 1],
      ["community", 0.6],
      ["reference", 0.8]
    ])
    const ok = parseSources(
      "version: 1\nsources:\n  - name: a\n    url: ../a\n  - name: t\n    url: https://git.example/t.git\n    kind: transcript\n",
      "/srv/registry",
      weights
    )
    assert.strictEqual(ok._tag, "Right")
    if (ok._tag === "Right") {
      assert.strictEqual(ok.right[0]?.url, "/srv/a")
      assert.deepStrictEqual(ok.right[0]?.include, ["**/*.md"])
      assert.isFalse(ok.right[1]?.enabled)
      assert.strictEqual(ok.right[1]?.trust, "community")
    }
    const bad = parseSources("version: 2\nsources: []\n", "/r", weights)
    assert.isTrue(bad._tag === "Left" && bad.left.includes("version"))
    const canonicalTranscript = parseSources(
      "version: 1\nsources:\n  - name: t\n    url: x\n    kind: transcript\n    trust: canonical\n",
      "/r",
      weights
    )
    assert.isTrue(canonicalTranscript._tag === "Left" && canonicalTranscript.left.includes("never canonical"))
    // A problem quoting a huge value is one line, not the value.
    const long = parseSources(
      `version: 1\nsources:\n  - name: a\n    url: x\n    description: ${"x".repeat(2001)}\n`,
      "/r",
      weights
    )
    assert.isTrue(long._tag === "Left")
    if (long._tag === "Left") {
      assert.include(long.left, "sources.0.description")
      assert.isAtMost(long.left.length, 400)
    }
    // A refusal never quotes a URL's credentials: not the YAML parser's code frame, not a value in the wrong place.
    for (const text of [
      "version: 1\nsources:\n  - name: t2\n    url: http://alice:LEAKPW5@127.0.0.1:1/auth.git\n     branch: x: y\n",
      'version: 1\nsources:\n  - name: t\n    url: ["http://alice:LEAKPW1@127.0.0.1:1/a.git"]\n',
      "version: 1\nsources:\n  - name: t\n    url: x\n    branch: { a: http://alice:LEAKPW2@h/x }\n",
      "version: 1\nsources:\n  - name: t\n    url: x\n    trust: http://alice:LEAKPW3@h/x\n"
    ]) {
      const refused = parseSources(text, "/r", weights)
      assert.isTrue(refused._tag === "Left", text)
      if (refused._tag === "Left") assert.notMatch(refused.left, /LEAKPW|alice/, refused.left)
    }
    const blank = parseSources('version: 1\nsources:\n  - name: t\n    url: "  "\n', "/r", weights)
    assert.isTrue(blank._tag === "Left" && blank.left.includes("sources.0.url: is empty"))
    // Spaces around a URL are a typo: still the URL, never a relative path holding its credentials.
    const spaced = parseSources(
      'version: 1\nsources:\n  - name: t\n    url: " https://git.example/t.git"\n',
      "/r",
      weights
    )
    assert.isTrue(spaced._tag === "Right" && spaced.right[0]?.url === "https://git.example/t.git")
  })

  it("a password holding a literal @ is taken out whole (the userinfo ends at the authority's last @)", () => {
    assert.deepStrictEqual(splitCredentials("http://alice:p@ss@127.0.0.1:1/auth.git"), {
      url: "http://127.0.0.1:1/auth.git",
      username: "alice",
      password: "p@ss"
    })
    assert.strictEqual(redactUrls("clone http://alice:p@ss@h/r.git failed"), "clone http://h/r.git failed")
    assert.strictEqual(redactUrls("see https://h/a@b.md"), "see https://h/a@b.md")
    for (const password of ["s3cr?t", "s3#cr", "a@b?c#d"]) {
      const url = `https://bot:${password}@git.example.com/org/repo.git`
      assert.deepStrictEqual(splitCredentials(url), {
        url: "https://git.example.com/org/repo.git",
        username: "bot",
        password
      })
      assert.strictEqual(redactUrls(`clone ${url} failed`), "clone https://git.example.com/org/repo.git failed")
    }
  })
})
