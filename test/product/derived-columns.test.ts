import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { FastCheck as fc } from "effect"
import { pageExpression, pagePath, utmSource, utmSourceExpression } from "../support/keel.js"

/**
 * The collector computes `page` and `utm_source` in TypeScript (both engines store the same values); until then
 * SQLite computed them with `pageExpression`/`utmSourceExpression` (migration 0005 still backfills with them). Each
 * value is compared inside SQLite (`IS`: byte for byte, nulls equal), so a string is compared as it is stored.
 */
const db = new Database(":memory:")
const samePage = db.prepare(`SELECT ? IS ${pageExpression("u")} AS same FROM (SELECT ? AS u)`).pluck()
const sameUtm = db.prepare(`SELECT ? IS ${utmSourceExpression("u")} AS same FROM (SELECT ? AS u)`).pluck()

const pageAgrees = (url: string | null) => samePage.get(pagePath(url), url) === 1
const utmAgrees = (utm: { source?: string } | undefined) =>
  sameUtm.get(utmSource(utm), utm === undefined ? null : JSON.stringify(utm)) === 1

/** The urls and UTM the product tests and benchmarks collect, and the shapes the SQL had to handle. */
const URLS = [
  "https://keel.dev/",
  "https://keel.dev/docs",
  "https://keel.dev/docs#intro",
  "https://keel.dev/pricing",
  "https://keel.dev/pricing?plan=team",
  "https://keel.dev/pricing?utm_source=hn",
  "https://keel.dev/later",
  "https://keel.dev",
  "https://keel.dev?x=1",
  "https://keel.dev#top",
  "https://user:pw@keel.dev:8080/a/b?c#d",
  "/docs?x#y",
  "/docs#y?x",
  "docs",
  "?only-query",
  "#only-fragment",
  "x://",
  "://",
  "a://b://c/d",
  "https://[::1]:8080/p",
  "https://keel.dev/é/😀?q",
  "https://keel.dev/x\ud800y"
]
const UTMS = [undefined, {}, { source: "hn" }, { source: "newsletter" }, { source: "bench" }, { source: "" }]

describe("page and utm_source computed in TypeScript", () => {
  it("equal what SQLite computed, on the urls and UTM the tests collect", () => {
    expect(pagePath(null)).toBeNull()
    expect(pageAgrees(null)).toBe(true)
    for (const url of URLS) expect(pageAgrees(url), url).toBe(true)
    for (const utm of UTMS) expect(utmAgrees(utm), JSON.stringify(utm)).toBe(true)
    expect(pagePath("https://keel.dev/pricing?x#y")).toBe("/pricing")
    expect(pagePath("https://keel.dev")).toBe("/")
  })

  it("equal what SQLite computed, on any url without U+0000 and any UTM source", () => {
    // Text SQLite's substr() cuts at U+0000 (it walks C strings): the one input where the two differ, and one
    // PostgreSQL cannot store at all. Everything else must agree.
    const pieces = fc.constantFrom("https://", "http://", "://", "/", "?", "#", ":", "a", "B", "é", "😀", "www.", "")
    const url = fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.array(pieces, { maxLength: 8 }).map((parts) => parts.join("")),
      fc.string({ unit: "binary", minLength: 1, maxLength: 40 })
    )
    fc.assert(
      fc.property(
        url.filter((u) => !u.includes("\u0000")),
        (u) => pageAgrees(u)
      ),
      { numRuns: 5_000, seed: 44 }
    )
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (source) => utmAgrees({ source })),
      { numRuns: 2_000, seed: 44 }
    )
  })
})
