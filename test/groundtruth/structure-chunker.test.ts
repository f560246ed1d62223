import { assert, describe, it } from "@effect/vitest"
import { type Chunk, chunkFile } from "../support/keel.js"

const options = { maxLines: 40, overlapLines: 5 }
const spans = (chunks: ReadonlyArray<Chunk>) => chunks.map((c) => [c.heading, c.line, c.endLine] as const)

/** Every chunk is exactly its lines of the file. */
const assertExact = (text: string, chunks: ReadonlyArray<Chunk>) => {
  const lines = text.replace(/\n$/, "").split("\n")
  for (const c of chunks) assert.strictEqual(c.content, lines.slice(c.line - 1, c.endLine).join("\n"), c.heading)
}

describe("structure-aware chunking", () => {
  it("package.json: a chunk per top-level key, the key as heading, the manifest vocabulary as hidden terms", () => {
    const text = `{
  "name": "demo",
  "version": "1.2.3",
  "engines": {
    "node": ">=20"
  },
  "scripts": {
    "test": "vitest"
  }
}
`
    const chunks = chunkFile("package.json", text, options)
    assert.deepStrictEqual(spans(chunks), [
      ["name", 2, 2],
      ["version", 3, 3],
      ["engines", 4, 6],
      ["scripts", 7, 9]
    ])
    assertExact(text, chunks)
    assert.include(chunks[2]!.terms, "supported node versions")
    assert.include(chunks[2]!.terms, "npm package manifest")
    assert.include(chunks[3]!.terms, "npm run")
  })

  it("a key longer than the limit is cut at its own keys (key path as heading); JSONC comments are tolerated", () => {
    const inner = Array.from({ length: 6 }, (_, i) => `    "k${i}": ${i},`).join("\n")
    const text = `{
  // settings
  "compilerOptions": {
${inner}
    "strict": true
  },
  "include": ["src"],
}
`
    const chunks = chunkFile("tsconfig.json", text, { maxLines: 4, overlapLines: 0 })
    assert.deepStrictEqual(spans(chunks).slice(0, 3), [
      ["compilerOptions", 2, 3],
      ["compilerOptions > k0", 4, 4],
      ["compilerOptions > k1", 5, 5]
    ])
    const strict = chunks.find((c) => c.heading === "compilerOptions > strict")!
    assert.deepStrictEqual([strict.line, strict.endLine], [10, 10])
    assert.include(strict.terms, "strict type checking")
    assert.include(strict.terms, "typescript compiler configuration")
    assertExact(text, chunks)
  })

  it("JSON that does not scan falls back to windows", () => {
    const chunks = chunkFile("broken.json", '{ "a": 1,,, }\n', options)
    assert.deepStrictEqual(spans(chunks), [["", 1, 1]])
  })

  it("YAML: top-level keys with the comments above them; a long key is cut at its children", () => {
    const text = `# CI for the project
name: ci
on:
  push:
    branches: [main]
  pull_request:
jobs:
  # runs the tests
  test:
    runs-on: ubuntu-latest
    steps:
      - run: npm test
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: npm run lint
`
    const chunks = chunkFile(".github/workflows/ci.yml", text, { maxLines: 6, overlapLines: 0 })
    assert.deepStrictEqual(spans(chunks), [
      ["name", 1, 2],
      ["on", 3, 6],
      ["jobs", 7, 7],
      ["jobs > test", 8, 12],
      ["jobs > lint", 13, 16]
    ])
    assertExact(text, chunks)
    assert.include(chunks[1]!.terms, "triggers events")
    assert.include(chunks[3]!.terms, "github actions ci")
  })

  it("TOML: a chunk per table (root keys each), dotted and array tables by their path, long tables cut at keys", () => {
    const text = `[package]
name = "rg"
edition = "2021"
rust-version = "1.72"

[[bin]]
name = "rg"
path = "crates/core/main.rs"

# Size over speed.
[profile.release]
opt-level = 3
lto = "fat"
features = [
  "a",
  "b = c",
]
`
    const chunks = chunkFile("Cargo.toml", text, { maxLines: 5, overlapLines: 0 })
    assert.deepStrictEqual(spans(chunks), [
      ["package", 1, 4],
      ["bin", 6, 8],
      ["profile.release", 10, 11],
      ["profile.release > opt-level", 12, 12],
      ["profile.release > lto", 13, 13],
      ["profile.release > features", 14, 17]
    ])
    assertExact(text, chunks)
    assert.include(chunks[0]!.terms, "minimum supported rust version")
    assert.include(chunks[2]!.terms, "build profile")
  })

  it("a comment belongs to the key below it: not a block scalar's last line (YAML), not the root keys' chunk (TOML)", () => {
    const yaml = "script: |\n  echo hi\n  # part of the script\n# about next\nnext: 1\n"
    const yamlChunks = chunkFile("ci.yml", yaml, options)
    assert.deepStrictEqual(spans(yamlChunks).slice(0, 2), [
      ["script", 1, 3],
      ["next", 4, 5]
    ])
    assertExact(yaml, yamlChunks)
    const toml = 'name = "x"\nversion = "1"\n# the build settings\n[build]\ntarget = "es2022"\n'
    const tomlChunks = chunkFile("config.toml", toml, options)
    assert.deepStrictEqual(
      spans(tomlChunks).map(([heading, line, end]) => [heading.split(" ")[0], line, end]),
      [
        ["name", 1, 1],
        ["version", 2, 2],
        ["build", 3, 5]
      ]
    )
    assertExact(toml, tomlChunks)
  })

  it("Markdown: a code block is never cut by a window and names its language; setext headings and link text count", () => {
    const code = Array.from({ length: 5 }, (_, i) => `const x${i} = ${i}`).join("\n")
    const text = `Release notes
=============

[1.2.0](https://example.com/compare) (2024-01-01)
--------------------------------------------------

prose one
prose two
\`\`\`ts
${code}
\`\`\`
after
`
    const chunks = chunkFile("CHANGELOG.md", text, { maxLines: 6, overlapLines: 0 })
    assert.deepStrictEqual(spans(chunks), [
      ["Release notes", 1, 3],
      ["Release notes > 1.2.0 (2024-01-01)", 4, 8],
      ["Release notes > 1.2.0 (2024-01-01)", 9, 15],
      ["Release notes > 1.2.0 (2024-01-01)", 16, 16]
    ])
    assertExact(text, chunks)
    assert.include(chunks[2]!.terms, "typescript")
    assert.strictEqual(chunks[1]!.terms, "")
  })

  it("front matter is not a heading", () => {
    const chunks = chunkFile("page.md", "---\ntitle: x\n---\n\n# Real\n\ntext\n", options)
    assert.deepStrictEqual(spans(chunks), [
      ["", 1, 4],
      ["Real", 5, 7]
    ])
  })

  it("source files: top-level declarations with their doc comments; short neighbours joined", () => {
    const body = Array.from({ length: 8 }, (_, i) => `  step(${i})`).join("\n")
    const text = `import x from "x"

/**
 * Sends a body.
 */
res.send = function send(body) {
${body}
}

exports.a = 1
exports.b = 2

function helper() {
${body}
}
`
    const chunks = chunkFile("lib/response.js", text, options)
    // The imports and the two one-line exports are too short to stand alone: they join res.send.
    assert.deepStrictEqual(spans(chunks), [
      ["res.send, a, b", 1, 19],
      ["helper", 20, 29]
    ])
    assertExact(text, chunks)
  })

  it("a type and its impl joined are headed by the name once", () => {
    const text = "pub struct Point {\n    x: i32,\n}\n\nimpl Point {\n    fn new() -> Self { Point { x: 0 } }\n}\n"
    const chunks = chunkFile("src/point.rs", text, options)
    assert.deepStrictEqual(spans(chunks), [["Point", 1, 7]])
    assertExact(text, chunks)
  })

  it("Python declarations carry their decorators and comments", () => {
    const text = "import os\n\n# Helper.\n@cache\ndef load(path):\n    return 1\n\nclass Store:\n    pass\n"
    const chunks = chunkFile("store.py", text, { maxLines: 40, overlapLines: 0 })
    assert.deepStrictEqual(spans(chunks), [["load, Store", 1, 9]])
  })
})
