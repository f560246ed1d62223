import { assert, describe, it } from "@effect/vitest"
import {
  ABSTENTION_MODEL,
  abstain,
  abstentionFeatures,
  features,
  ftsQuery,
  idf,
  isStopword,
  namedSources,
  queryTerms,
  RRF_K,
  reciprocalRankFusion,
  rerankScore,
  salientTerms,
  stem,
  stemSequence,
  unsupportedTerms,
  words
} from "../support/keel.js"

describe("terms", () => {
  it("a light stemmer meets inflections; identifiers are split into their parts and keep their runs", () => {
    assert.strictEqual(stem("installing"), stem("installs"))
    assert.strictEqual(stem("installed"), stem("install"))
    assert.strictEqual(stem("libraries"), "library")
    assert.strictEqual(stem("4.20"), "4.20")
    assert.deepStrictEqual(words("bodyLimit"), ["bodylimit", "body", "limit"])
    assert.includeMembers(words("instance.defaults.headers"), ["instance.defaults", "defaults.headers", "headers"])
    assert.includeMembers(words("4.20.0"), ["4.20", "20.0", "4.20.0"])
  })

  it("query terms drop stopwords; the stopword-free AND and OR queries quote every word", () => {
    assert.deepStrictEqual(queryTerms("How do I install the CLI?"), ["install", "cli"])
    assert.strictEqual(ftsQuery("How do I install the CLI?", "all", isStopword), '"install" "cli"')
    assert.strictEqual(ftsQuery("How do I install the CLI, install?", "any", isStopword), '"install" OR "cli"')
  })

  it("salient terms are what a question names: identifiers, versions, flags, quoted words, mid-sentence names", () => {
    assert.deepStrictEqual(
      salientTerms(
        "Does `server.forwardConsole` work on Heroku with express 4.20 and --cache? I've read it's pretty-printed."
      ),
      ["server.forwardconsole", "cache", "heroku", "4.20"]
    )
    assert.deepStrictEqual(salientTerms("How do I install it, e.g. on a third-party host?"), [])
  })

  it("a source is named when its name is a word of the question", () => {
    assert.deepStrictEqual([...namedSources("Does Vite proxy websockets?", ["vite", "fastify"])], ["vite"])
    assert.deepStrictEqual([...namedSources("invite only", ["vite"])], [])
  })
})

describe("fusion and reranking", () => {
  it("reciprocal rank fusion sums weight/(k + rank) over the lists an id is in", () => {
    const fused = reciprocalRankFusion([
      { ids: [1, 2, 3], weight: 1 },
      { ids: [3, 1], weight: 1 },
      { ids: [3], weight: 0.5 }
    ])
    assert.closeTo(fused.get(1)!, 1 / (RRF_K + 1) + 1 / (RRF_K + 2), 1e-12)
    assert.closeTo(fused.get(3)!, 1 / (RRF_K + 3) + 1 / (RRF_K + 1) + 0.5 / (RRF_K + 1), 1e-12)
    assert.strictEqual([...fused].sort((a, b) => b[1] - a[1])[0]![0], 3)
  })

  const profile = (question: string, documents: number, df: Record<string, number>, named: Array<string> = []) => {
    const sequence = stemSequence(question)
    const weights = new Map([...new Set(sequence)].map((s) => [s, idf(documents, df[s] ?? 0)]))
    return { weights, total: [...weights.values()].reduce((a, b) => a + b, 0), sequence, named: new Set(named) }
  }

  it("coverage is idf-weighted; density rewards the terms together; heading, adjacency and the named source count", () => {
    const p = profile("limit request body size", 1000, { limit: 50, request: 400, body: 100, size: 80 }, ["fastify"])
    const passage = (content: string, heading = "", repo = "fastify") => ({
      repo,
      path: "docs/Server.md",
      heading,
      content,
      terms: ""
    })
    const together = features(p, passage("Set the request body size limit here."), 1, 1)
    const apart = features(
      p,
      passage(["request", ...Array.from({ length: 12 }, () => "filler"), "body size limit"].join("\n")),
      1,
      1
    )
    assert.closeTo(together.coverage, 1, 1e-9)
    assert.closeTo(apart.coverage, 1, 1e-9)
    assert.isAbove(together.density, apart.density)
    assert.isAbove(together.proximity, 0)
    const named = features(p, passage("x", "Request body limit"), 1, 1)
    const other = features(p, passage("x", "Request body limit", "vite"), 1, 1)
    assert.strictEqual(named.named, 1)
    assert.strictEqual(other.named, 0)
    assert.isAbove(named.heading, 0.5)
    // The rarest term weighs the most: a passage with only "body" beats one with only "request".
    const rare = features(p, passage("body"), 1, 1)
    const common = features(p, passage("request"), 1, 1)
    assert.isAbove(rare.coverage, common.coverage)
  })

  it("trust breaks ties but never reorders clearly different relevance", () => {
    const base = { fusion: 1, coverage: 0.5, density: 0.5, heading: 0, proximity: 0, named: 0 }
    assert.isAbove(rerankScore({ ...base, trust: 1 }), rerankScore({ ...base, trust: 0.6 }))
    assert.isAbove(rerankScore({ ...base, fusion: 0.9, trust: 0.6 }), rerankScore({ ...base, fusion: 0.8, trust: 1 }))
  })
})

describe("grounded abstention", () => {
  const hit = (support: number, matched: Array<string> = [], density = support) => ({ support, density, matched })
  const known = (df: Record<string, number>) => (s: string) => df[s] ?? 0
  const options = { minSupport: 0.2, sourceNames: ["vite"] }
  const question = (weights: Record<string, number>, salient: Array<string> = [], df: Record<string, number> = {}) => ({
    weights: new Map(Object.entries(weights)),
    salient,
    documentFrequency: known(df)
  })

  it("no passage at all: missing", () => {
    assert.deepStrictEqual(abstain(question({}), [], options).reason, "no_passages")
  })

  it("a salient term no indexed passage holds: missing, naming it; a source's name never counts", () => {
    const verdict = abstain(question({}, ["heroku", "vite"]), [hit(0.9)], options)
    assert.isTrue(verdict.missing)
    assert.strictEqual(verdict.reason, "salient_term_unknown")
    assert.deepStrictEqual(verdict.unknown, ["heroku"])
    assert.isFalse(abstain(question({}, ["vite", "proxy"], { proxy: 3 }), [hit(0.9)], options).missing)
  })

  it("support below the floor among the first passages: missing; at or above: answered", () => {
    assert.strictEqual(abstain(question({}), [hit(0.15), hit(0.1)], options).reason, "low_support")
    const answered = abstain(question({}), [hit(0.1), hit(0.3)], options)
    assert.isFalse(answered.missing)
    assert.strictEqual(answered.support, 0.3)
  })

  it("the features: idf shares uncovered by the examined passages, of the rarest third uncovered by the first, absent from the index", () => {
    // idf: heartbeat 6 (no passage holds it), interval 3, stream 2, event 1 (total 12).
    const weights = { heartbeat: 6, interval: 3, stream: 2, event: 1 }
    const hits = [hit(0.25, ["stream", "event"], 0.2), hit(0.2, ["interval"], 0.1), hit(0.1, ["event"])]
    const f = abstentionFeatures(new Map(Object.entries(weights)), known({ interval: 4, stream: 9, event: 30 }), hits)
    assert.closeTo(f.uncovered, 6 / 12, 1e-12)
    // The rarest third of four stems is the rarest two: heartbeat (uncovered) and interval (held by the second).
    assert.closeTo(f.rare_uncovered, 6 / 9, 1e-12)
    assert.closeTo(f.absent, 6 / 12, 1e-12)
    assert.strictEqual(f.support, 0.25)
    assert.strictEqual(f.density, 0.2)
  })

  it("the fitted model: a question whose rarest words no passage holds is not covered; one whose words are held is", () => {
    const weights = { heartbeat: 6, interval: 3, stream: 2, event: 1 }
    const df = { interval: 4, stream: 9, event: 30 }
    const near = abstain(
      question(weights, [], df),
      [hit(0.25, ["stream", "event"], 0.2), hit(0.25, ["interval"]), hit(0.1, ["event"])],
      options
    )
    assert.isTrue(near.missing)
    assert.strictEqual(near.reason, "not_supported")
    assert.isAbove(near.score, ABSTENTION_MODEL.threshold)
    const held = abstain(
      question(weights, [], { ...df, heartbeat: 2 }),
      [hit(0.9, ["heartbeat", "interval", "stream"], 0.9), hit(0.4, ["event"])],
      options
    )
    assert.isFalse(held.missing)
    assert.isBelow(held.score, ABSTENTION_MODEL.threshold)
  })

  it("a generated answer naming what its cited passages never say is unsupported", () => {
    const cited = [{ content: "Set bodyLimit to change the maximum payload (default 1 MiB)." }]
    assert.deepStrictEqual(unsupportedTerms("Use bodyLimit [1].", cited), [])
    assert.deepStrictEqual(unsupportedTerms("Use maxPayloadSize in version 5.2 [1].", cited), ["maxpayloadsize", "5.2"])
  })
})
