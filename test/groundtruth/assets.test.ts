import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { HttpTest } from "../support/http.js"
import { BrandAssetsDocument } from "../support/keel.js"
import { buildCorpus, commitFiles, git } from "./git-fixture.js"

const corpus = buildCorpus()
const PNG = Buffer.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 7, 7, 7
])
const assetsCommit = commitFiles(
  corpus.docs,
  {
    "brand/logo.svg": '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>\n',
    "brand/app-icon.png": PNG,
    "brand/looks-like-a-logo.png": PNG
  },
  "brand assets"
)
commitFiles(
  corpus.registry,
  {
    "sources.yml": corpus
      .sources()
      .replace("    trust: canonical\n", "    trust: canonical\n    web_url: https://github.com/fastify/fastify\n"),
    "brand-assets.yml": `products:
  fastify:
    logo:
      - { repo: fastify, path: brand/logo.svg, visibility: public, variant: dark }
    app_icon:
      - { repo: fastify, path: brand/app-icon.png, visibility: private }
`
  },
  "assets registry"
)

const get = (url: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.get(url))
    const bytes = new Uint8Array(yield* response.arrayBuffer)
    return {
      status: response.status,
      headers: response.headers,
      bytes,
      json: () => JSON.parse(Buffer.from(bytes).toString())
    }
  }).pipe(Effect.scoped)

const ingest = Effect.gen(function* () {
  const client = yield* HttpClient.HttpClient
  yield* client.execute(HttpClientRequest.post("/ingest/repo").pipe(HttpClientRequest.bodyUnsafeJson({})))
}).pipe(Effect.scoped)

describe("brand-assets.yml", () => {
  it("refuses paths that could escape the listed file", () => {
    for (const bad of ["../secret", "/etc/passwd", "a/../../b", "a//b", "a\u0000b"]) {
      const doc = { products: { p: { logo: [{ repo: "r", path: bad }] } } }
      assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(BrandAssetsDocument)(doc)), bad)
    }
  })
})

layer(HttpTest({ settings: { dataDir: path.join(corpus.root, "data") }, env: { GT_REGISTRY_REPO: corpus.registry } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("brand assets", (it) => {
  it.effect("only listed assets exist, resolved to a commit with a blob URL; private ones get a content URL", () =>
    Effect.gen(function* () {
      yield* ingest
      const all = (yield* get("/assets")).json()
      assert.deepStrictEqual(
        all.map((a: { kind: string; path: string }) => `${a.kind}:${a.path}`),
        ["logo:brand/logo.svg", "app_icon:brand/app-icon.png"]
      )
      const logo = all[0]
      assert.strictEqual(logo.commit, assetsCommit)
      assert.strictEqual(logo.blobUrl, `https://github.com/fastify/fastify/blob/${assetsCommit}/brand/logo.svg`)
      assert.isUndefined(logo.contentUrl)
      assert.strictEqual(all[1].contentUrl, "/assets/fastify/app_icon/0/content")
      assert.deepStrictEqual((yield* get("/assets/products")).json(), ["fastify"])
      assert.deepStrictEqual((yield* get("/assets/kinds")).json(), [
        "logo",
        "favicon",
        "app_icon",
        "font",
        "store_badge"
      ])
      assert.strictEqual((yield* get("/assets?q=icon")).json().length, 1)
      assert.strictEqual((yield* get("/assets?product=fastify&kind=logo")).json()[0].variant, "dark")
      assert.strictEqual((yield* get("/assets/fastify/logo")).json().length, 1)
    })
  )

  it.effect("content is the exact bytes at the asset's commit, with its Content-Type", () =>
    Effect.gen(function* () {
      const icon = yield* get("/assets/fastify/app_icon/0/content")
      assert.strictEqual(icon.status, 200)
      assert.strictEqual(icon.headers["content-type"], "image/png")
      assert.deepStrictEqual(Buffer.from(icon.bytes), PNG)
      const svg = yield* get("/assets/fastify/logo/0/content")
      // The repository's bytes never run on this origin (an SVG may hold a script).
      assert.strictEqual(
        svg.headers["content-security-policy"],
        "default-src 'none'; style-src 'unsafe-inline'; sandbox"
      )
      assert.strictEqual(
        Buffer.from(svg.bytes).toString(),
        `${git(corpus.docs, "show", `${assetsCommit}:brand/logo.svg`)}\n`
      )
    })
  )

  it.effect("unknown product, kind or index is 404", () =>
    Effect.gen(function* () {
      for (const url of [
        "/assets/nope/logo",
        "/assets/fastify/favicon",
        "/assets/fastify/logo/5/content",
        "/assets/x/y/0/content"
      ]) {
        const answer = yield* get(url)
        assert.strictEqual(answer.status, 404, url)
        assert.strictEqual(answer.json().code, "ASSET_NOT_FOUND")
      }
    })
  )

  it.effect("a blob URL never shows credentials or a token; a refused brand-assets.yml keeps the last valid list", () =>
    Effect.gen(function* () {
      const sources = corpus.sources()
      commitFiles(
        corpus.registry,
        {
          "sources.yml": sources.replace(
            "    trust: canonical\n",
            "    trust: canonical\n    web_url: https://carol:W3bPass@github.com/fastify/fastify?token=QSECRET\n"
          )
        },
        "a web_url with credentials"
      )
      yield* ingest
      const listed = (yield* get("/assets")).json()
      assert.strictEqual(listed[0].blobUrl, `https://github.com/fastify/fastify/blob/${assetsCommit}/brand/logo.svg`)
      const text = JSON.stringify(listed)
      for (const secret of ["carol", "W3bPass", "QSECRET"]) assert.notInclude(text, secret)

      commitFiles(
        corpus.registry,
        { "brand-assets.yml": "products:\n  p:\n    logo: [{ repo: fastify, path: ../../etc/passwd }]\n" },
        "a bad asset list"
      )
      yield* ingest
      assert.strictEqual((yield* get("/assets")).json().length, 2, "the last valid list keeps serving")
    })
  )

  it.effect("a disabled source's assets are not served", () =>
    Effect.gen(function* () {
      commitFiles(
        corpus.registry,
        {
          "sources.yml": corpus
            .sources()
            .replace("    trust: canonical\n", "    trust: canonical\n    enabled: false\n")
        },
        "fastify disabled"
      )
      yield* ingest
      assert.deepStrictEqual((yield* get("/assets")).json(), [])
      assert.strictEqual((yield* get("/assets/fastify/app_icon/0/content")).status, 404)
    })
  )
})
