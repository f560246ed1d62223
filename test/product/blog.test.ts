import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { runCli } from "../support/cli.js"
import { HttpTest } from "../support/http.js"
import { Blog, parsePost } from "../support/keel.js"

const post = (front: Record<string, unknown>, body = "Hello **world**.") =>
  `---\n${Object.entries(front)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join("\n")}\n---\n\n${body}\n`

const DAY = 86_400_000
const iso = (millis: number) => new Date(millis).toISOString()

/** A posts directory: 20 published posts on "news" (two sharing a date), a draft, a scheduled post, hostile HTML. */
const postsDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-blog-"))
  fs.mkdirSync(path.join(dir, "news"))
  fs.mkdirSync(path.join(dir, "changelog"))
  const base = Date.parse("2026-01-01T00:00:00Z")
  for (let i = 1; i <= 20; i++) {
    const date = i === 20 ? base + 19 * DAY : base + i * DAY // post-19 and post-20 share a date
    fs.writeFileSync(
      path.join(dir, "news", `post-${String(i).padStart(2, "0")}.md`),
      post(
        { title: `Post ${i}`, status: "published", published_at: iso(date), tags: ["news"] },
        `Body ${i}. `.repeat(50)
      )
    )
  }
  fs.writeFileSync(path.join(dir, "news", "draft.md"), post({ title: "Draft", status: "draft" }))
  fs.writeFileSync(
    path.join(dir, "news", "scheduled.md"),
    post({ title: "Scheduled", status: "published", published_at: iso(Date.now() + 30 * DAY) })
  )
  fs.writeFileSync(
    path.join(dir, "changelog", "hostile.md"),
    post(
      { title: "Hostile", status: "published", published_at: iso(base), excerpt: "Careful", cover_image: "/c.png" },
      "<script>alert(1)</script>\n\n[click](javascript:alert(1)) and [fine](https://keel.dev)\n\n<img src=x onerror=alert(1)>"
    )
  )
  return dir
}

const getJson = (url: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.get(url).pipe(HttpClientRequest.setHeaders(headers)))
    const text = yield* response.text
    return { status: response.status, headers: response.headers, body: text === "" ? null : JSON.parse(text) }
  }).pipe(Effect.scoped)

describe("blog sources", () => {
  it("front matter is validated and the surface and slug default from the path", () => {
    const ok = parsePost(
      "/root/news/hello-world.md",
      "/root",
      post({ title: "Hi", status: "published", published_at: "2026-01-01T00:00:00Z" })
    )
    assert.strictEqual(ok._tag, "Right")
    if (ok._tag === "Right") {
      assert.strictEqual(ok.right.surface, "news")
      assert.strictEqual(ok.right.slug, "hello-world")
      assert.strictEqual(ok.right.readingTimeMinutes, 1)
      assert.strictEqual(ok.right.excerpt, "Hello world.")
    }
    const noDate = parsePost("/root/a.md", "/root", post({ title: "Hi", status: "published" }))
    assert.isTrue(noDate._tag === "Left" && noDate.left.includes("published_at"))
    const unknownKey = parsePost("/root/a.md", "/root", post({ title: "Hi", colour: "red" }))
    assert.isTrue(unknownKey._tag === "Left" && unknownKey.left.includes("colour"))
    assert.strictEqual(parsePost("/root/a.md", "/root", "no front matter")._tag, "Left")
  })

  it("a publication date-time without a zone is UTC on every host (never the server's zone); a date alone is its UTC midnight", () => {
    const at = (published: string) => {
      const parsed = parsePost(
        "/root/news/p.md",
        "/root",
        `---\ntitle: P\nstatus: published\npublished_at: ${published}\n---\nText.\n`
      )
      assert.strictEqual(parsed._tag, "Right", published)
      return parsed._tag === "Right" ? new Date(parsed.right.publishedAt ?? 0).toISOString() : ""
    }
    assert.strictEqual(at("2026-11-01 10:00"), "2026-11-01T10:00:00.000Z")
    assert.strictEqual(at("2026-11-01T10:00:30"), "2026-11-01T10:00:30.000Z")
    assert.strictEqual(at("2026-11-01"), "2026-11-01T00:00:00.000Z")
    assert.strictEqual(at("2026-11-01T10:00:00+02:00"), "2026-11-01T08:00:00.000Z")
    assert.strictEqual(at("2028-02-29"), "2028-02-29T00:00:00.000Z")
    assert.strictEqual(at("2026-11-01T10:00:00.5+0200"), "2026-11-01T08:00:00.500Z")
    assert.strictEqual(at("2026-11-01 10:00Z"), "2026-11-01T10:00:00.000Z")
  })

  it("the excerpt is plain text with the characters the Markdown wrote; a BOM is no content; a cover is a path or http(s)", () => {
    const parsed = parsePost(
      "/root/news/p.md",
      "/root",
      `\uFEFF---\ntitle: P\n---\nTom & Jerry <b>bold</b> "quoted" [link](https://x.dev) \`a < b\` &copy; &#8364;\n`
    )
    assert.strictEqual(parsed._tag, "Right")
    if (parsed._tag === "Right")
      // `<` and `>` stay out: a page that puts an excerpt into HTML unescaped gets no markup from it.
      assert.strictEqual(parsed.right.excerpt, "Tom & Jerry b bold /b “quoted” link a b © €")
    for (const [cover, ok] of [
      ["/images/c.png", true],
      ["images/c.png", true],
      ["https://cdn.example.com/c.png", true],
      ["javascript:alert(1)", false],
      ["JavaScript:alert(1)", false],
      ["data:image/svg+xml,<svg/>", false],
      ["vbscript:x", false],
      ["/c.png\njavascript:x", false]
    ] as const) {
      const post = parsePost(
        "/root/news/p.md",
        "/root",
        `---\ntitle: P\ncover_image: ${JSON.stringify(cover)}\n---\nx\n`
      )
      assert.strictEqual(post._tag === "Right", ok, cover)
      if (!ok) assert.isTrue(post._tag === "Left" && post.left.includes("cover_image"), cover)
    }
  })

  it("a date that is not on the calendar fails the file, never rolled over into the next month", () => {
    for (const published of [
      "2026-02-30T00:00:00Z",
      "2026-02-30",
      "2026-04-31T10:00:00Z",
      "2027-02-29",
      "2026-11-01T25:00:00Z",
      "2026-11-01 10:61"
    ]) {
      const parsed = parsePost(
        "/root/news/p.md",
        "/root",
        `---\ntitle: P\nstatus: published\npublished_at: "${published}"\n---\nText.\n`
      )
      assert.isTrue(parsed._tag === "Left" && parsed.left.includes("published_at"), published)
    }
  })
})

describe("a front-matter date that cannot be read", () => {
  const DATE_RULE = "expected an ISO 8601 date or date-time as text, such as 2026-11-10 or 2026-11-10T09:00:00Z"
  it("fails the file with one message that names the field and the form, never a schema's type name", () => {
    for (const [value, reason] of [
      ["2026", DATE_RULE],
      ["1790000000000", DATE_RULE],
      ["true", DATE_RULE],
      ["[2026-11-10]", DATE_RULE],
      ["{day: 10}", DATE_RULE],
      ["null", DATE_RULE],
      ["tomorrow", DATE_RULE],
      // Text the JavaScript date parser reads but that is no ISO 8601 (the last in the server's own zone).
      ['"2026"', DATE_RULE],
      ['"Nov 10 2026"', DATE_RULE],
      ['"Tue, 10 Nov 2026 09:00:00 GMT"', DATE_RULE],
      ['"11/10/2026 09:00"', DATE_RULE],
      ['"2026-11-10 and then some"', DATE_RULE],
      ['"2026-13-01"', "expected a date that exists on the calendar"],
      ['"2026-02-30"', "expected a date that exists on the calendar"]
    ] as const) {
      for (const field of ["published_at", "updated_at"]) {
        const front =
          field === "published_at" ? `published_at: ${value}` : `published_at: 2026-11-10\nupdated_at: ${value}`
        const parsed = parsePost("/root/news/p.md", "/root", `---\ntitle: P\nstatus: published\n${front}\n---\nText.\n`)
        assert.deepStrictEqual(parsed, Either.left(`${field}: ${reason}`), `${field}: ${value}`)
      }
    }
  })
})

const dir = postsDir()

layer(HttpTest(), { timeout: "60 seconds", excludeTestServices: true })("GET /api/public/blog", (it) => {
  it.effect("imports idempotently", () =>
    Effect.gen(function* () {
      const blog = yield* Blog
      const first = yield* blog.importDirectory(dir)
      assert.strictEqual(first.created.length, 23)
      assert.deepStrictEqual(first.failed, [])
      const again = yield* blog.importDirectory(dir)
      assert.deepStrictEqual(
        { created: again.created, updated: again.updated, unchanged: again.unchanged },
        { created: [], updated: [], unchanged: 23 }
      )
    })
  )

  it.effect("lists published posts newest first, slug breaking ties, 15 per page by default", () =>
    Effect.gen(function* () {
      const page1 = yield* getJson("/api/public/blog/news")
      assert.strictEqual(page1.status, 200)
      const slugs = page1.body.posts.map((p: { slug: string }) => p.slug)
      assert.deepStrictEqual(slugs.slice(0, 3), ["post-19", "post-20", "post-18"])
      assert.strictEqual(slugs.length, 15)
      assert.deepStrictEqual(page1.body.meta.pagination, {
        page: 1,
        limit: 15,
        pages: 2,
        total: 20,
        next: 2,
        prev: null
      })
      const summary = page1.body.posts[0]
      assert.deepStrictEqual(Object.keys(summary).sort(), [
        "cover_image",
        "excerpt",
        "published_at",
        "reading_time_minutes",
        "slug",
        "tags",
        "title",
        "updated_at"
      ])
      const page2 = yield* getJson("/api/public/blog/news?page=2")
      assert.strictEqual(page2.body.posts.length, 5)
      assert.deepStrictEqual(page2.body.meta.pagination, {
        page: 2,
        limit: 15,
        pages: 2,
        total: 20,
        next: null,
        prev: 1
      })
      assert.notInclude(
        [...page1.body.posts, ...page2.body.posts].map((p: { slug: string }) => p.slug),
        "draft"
      )
    })
  )

  it.effect("limit is clamped to 1..50; a non-integer limit or page is 400", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* getJson("/api/public/blog/news?limit=0")).body.meta.pagination.limit, 1)
      assert.strictEqual((yield* getJson("/api/public/blog/news?limit=500")).body.meta.pagination.limit, 50)
      const bad = yield* getJson("/api/public/blog/news?limit=ten")
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.body.code, "VALIDATION_FAILED")
      assert.strictEqual((yield* getJson("/api/public/blog/news?page=0")).status, 400)
      // Only decimal digits are an integer: what Number() would also read is refused, not reinterpreted.
      for (const query of ["page=0x2", "limit=1e1", "page=%201", "limit=2.0", "page=Infinity"]) {
        const refused = yield* getJson(`/api/public/blog/news?${query}`)
        assert.strictEqual(refused.status, 400, query)
        assert.strictEqual(refused.body.errors[0].message, "must be a decimal integer", query)
      }
      assert.strictEqual((yield* getJson("/api/public/blog/news?page=02")).body.meta.pagination.page, 2)
    })
  )

  it.effect("one post carries its HTML; raw HTML and script links are not rendered", () =>
    Effect.gen(function* () {
      const one = yield* getJson("/api/public/blog/news/post-03")
      assert.strictEqual(one.status, 200)
      assert.strictEqual(one.body.post.title, "Post 3")
      assert.include(one.body.post.html, "<p>Body 3. Body 3.")
      assert.strictEqual(one.body.post.reading_time_minutes, 1)
      const hostile = yield* getJson("/api/public/blog/changelog/hostile")
      const html: string = hostile.body.post.html
      assert.notInclude(html, "<script")
      assert.notInclude(html, "<img")
      assert.notInclude(html, 'href="javascript:')
      assert.include(html, 'href="https://keel.dev"')
      assert.strictEqual(hostile.body.post.excerpt, "Careful")
    })
  )

  it.effect("drafts, scheduled posts, unknown slugs and unknown surfaces are the same 404", () =>
    Effect.gen(function* () {
      const answers = yield* Effect.all([
        getJson("/api/public/blog/news/draft"),
        getJson("/api/public/blog/news/scheduled"),
        getJson("/api/public/blog/news/nope"),
        getJson("/api/public/blog/nowhere/post-01"),
        getJson("/api/public/blog/nowhere"),
        // Whatever the shape of a slug or surface no post has (upper case, underscores, up to 200 characters).
        getJson("/api/public/blog/news/Sticky-Experiments"),
        getJson("/api/public/blog/news/sticky_experiments"),
        getJson(`/api/public/blog/news/${"a".repeat(120)}`),
        getJson(`/api/public/blog/${"s".repeat(200)}`)
      ])
      for (const answer of answers) {
        assert.strictEqual(answer.status, 404)
        assert.strictEqual(answer.body.code, "POST_NOT_FOUND")
        assert.strictEqual(answer.body.detail, "no such published post")
      }
    })
  )

  it.effect("weak ETag with If-None-Match answers 304; cacheable publicly for 60 s; open CORS", () =>
    Effect.gen(function* () {
      const first = yield* getJson("/api/public/blog/news/post-01")
      const etag = first.headers.etag ?? ""
      assert.match(etag, /^W\/"/)
      assert.strictEqual(first.headers["cache-control"], "public, max-age=60")
      assert.strictEqual(first.headers["access-control-allow-origin"], "*")
      const again = yield* getJson("/api/public/blog/news/post-01", { "if-none-match": etag })
      assert.strictEqual(again.status, 304)
      assert.isNull(again.body)
      // RFC 9110: weak comparison (the tag without W/ matches), `*`, and a list naming it.
      for (const ifNoneMatch of [etag.slice(2), "*", `"other", ${etag}`]) {
        const conditional = yield* getJson("/api/public/blog/news/post-01", { "if-none-match": ifNoneMatch })
        assert.strictEqual(conditional.status, 304, ifNoneMatch)
      }
      assert.strictEqual((yield* getJson("/api/public/blog/news/post-01", { "if-none-match": '"other"' })).status, 200)
      const list = yield* getJson("/api/public/blog/news")
      assert.strictEqual(
        (yield* getJson("/api/public/blog/news", { "if-none-match": list.headers.etag ?? "" })).status,
        304
      )
    })
  )
})

describe("ctl blog import", () => {
  it.effect("reports what it imported, and exits 1 naming a file that fails", () =>
    Effect.gen(function* () {
      const posts = postsDir()
      const env = { KEEL_DATA_DIR: path.join(posts, ".data") }
      const ok = yield* runCli(["blog", "import", posts, "--json"], env)
      assert.strictEqual(ok.exitCode, 0)
      assert.strictEqual(JSON.parse(ok.stdout).created.length, 23)
      fs.writeFileSync(
        path.join(posts, "news", "post-01.md"),
        post({ title: "Post 1, edited", status: "published", published_at: "2026-01-02T00:00:00Z" })
      )
      fs.writeFileSync(path.join(posts, "news", "broken.md"), "---\ntitle: [unclosed\n---\n")
      const partial = yield* runCli(["blog", "import", posts, "--json"], env)
      assert.strictEqual(partial.exitCode, 1)
      const report = JSON.parse(partial.stdout)
      assert.deepStrictEqual(report.updated, ["news/post-01"])
      assert.strictEqual(report.failed[0].file, path.join("news", "broken.md"))
      assert.include(partial.stderr, "could not be imported")
    })
  )
})
