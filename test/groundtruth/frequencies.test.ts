import { assert, describe, it } from "@effect/vitest"
import { frequencyCounter, stems } from "../support/keel.js"

/** Document frequencies the plain way: each text's distinct stems, counted. */
const naive = (texts: ReadonlyArray<readonly [string, 1 | -1]>) => {
  const df = new Map<string, number>()
  for (const [text, by] of texts) for (const s of stems(text)) df.set(s, (df.get(s) ?? 0) + by)
  return new Map([...df].filter(([, n]) => n !== 0))
}

const counted = (texts: ReadonlyArray<readonly [string, 1 | -1]>) => {
  const counter = frequencyCounter()
  for (const [text, by] of texts) counter.add(text, by)
  return { df: new Map(counter.changes().map((c) => [c.stem, c.df])), analysed: counter.analysed() }
}

const TEXTS = [
  "# Installing the CLI\n\nRun `npm install keel` and then installs happen; installed packages are listed.",
  "The bodyLimit option (body_limit in YAML, BODY-LIMIT in env) sets the limit; see instance.defaults.headers.",
  "Version 4.20.0 fixed 4.20's parser; v2.3.4.5.6.7 and a.b.c.d.e.f.g.h.i.j.k.l are chains.",
  "HTTPServer, XMLHttpRequest, parseJSON, getURLForPath and __proto__ are identifiers.",
  // NFKC: a ligature, full-width letters, a superscript; and scripts other than Latin.
  "The ﬁle ＡＢＣ x² — naïve café, Straße, Привет мир, 東京の設定, مرحبا",
  "the and of a to is it with",
  "",
  "repeat repeat repeat REPEAT Repeat repeated repeating",
  "\uFEFF# BOM heading\nkey: value\nother_key: 12"
] as const

describe("document frequencies", () => {
  it("counts the same stems as each text's stems, in and out", () => {
    const texts: Array<readonly [string, 1 | -1]> = [
      ...TEXTS.map((t) => [t, 1] as const),
      ...TEXTS.map((t) => [`${t}\nsecond copy with bodyLimit`, 1] as const),
      [TEXTS[0], -1],
      [TEXTS[3], -1],
      ["nothing like before: zebra", -1]
    ]
    assert.deepStrictEqual(counted(texts).df, naive(texts))
  })

  it("a stem counts once per text however often the text holds it", () => {
    const { df } = counted([
      ["install installs installing installed", 1],
      ["install", 1]
    ])
    assert.strictEqual(df.get(stems("install").values().next().value ?? ""), 2)
  })

  it("works out each distinct token once, however many texts hold it", () => {
    const chunk = "Each chunk repeats these words: bodyLimit, instance.defaults.headers, 4.20.0 and café."
    const texts = Array.from({ length: 1000 }, (_, i) => [`${chunk} (${i % 10})`, 1] as const)
    const { df, analysed } = counted(texts)
    assert.deepStrictEqual(df, naive(texts))
    // Eleven distinct tokens in the chunk and ten different digits at its end.
    const distinct = new Set(texts.flatMap(([t]) => t.match(/[\p{L}\p{N}_]+(?:[.-][\p{L}\p{N}_]+)*/gu) ?? []))
    assert.strictEqual(analysed, distinct.size)
  })
})
