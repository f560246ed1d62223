import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { vaultGrant } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { makeObjectApiClient, ObjectStore, objectAction, sha256Hex, vaultTokenFromGrantFile } from "../support/keel.js"
import { serverPort } from "../support/market.js"

// Issue 15, the object API: S3-like reads and conditional writes over the object gateway, every request
// authorized by registry action (examples/registry.yml: ops holds object-read, object-write and
// release-submit; beacon-forge-1 holds host-state-write).

const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly text: string
  // biome-ignore lint/suspicious/noExplicitAny: problem and head bodies, checked field by field
  readonly json: any
}

const send = (
  method: "GET" | "HEAD" | "PUT" | "DELETE",
  url: string,
  options: {
    readonly token?: string
    readonly body?: string | Uint8Array
    readonly headers?: Record<string, string>
  } = {}
) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(url).pipe(
      HttpClientRequest.setHeaders({
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
        ...options.headers
      })
    )
    if (options.body !== undefined)
      request = HttpClientRequest.bodyUint8Array(
        request,
        typeof options.body === "string" ? new TextEncoder().encode(options.body) : options.body,
        "application/octet-stream"
      )
    const response = yield* client.execute(request)
    const text = method === "HEAD" ? "" : yield* response.text
    // biome-ignore lint/suspicious/noExplicitAny: problem and head bodies, checked field by field
    let json: any
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: response.status, headers: response.headers as Record<string, string>, text, json } satisfies Answer
  }).pipe(Effect.scoped, Effect.orDie)

/** A live token of `consumer` whose grant holds `actions` (for `hosts`); `ttlMillis` bounds its grant. */
const tokenOf = (consumer: string, actions: Array<string>, hosts: Array<string> = [], ttlMillis = 3_600_000) =>
  Effect.map(vaultGrant({ consumer, actions, hosts, ttlMillis }), (g) => g.token)

const opsToken = tokenOf("ops", ["object-read", "object-write", "release-submit"])

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "120 seconds",
  excludeTestServices: true
})("the object API (/api/objects)", (it) => {
  it.effect("PUT, GET, HEAD and DELETE round-trip bytes with their SHA-256 as the ETag", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const put = yield* send("PUT", "/api/objects/state/notes/a.json", { token, body: '{"a":1}' })
      assert.strictEqual(put.status, 200)
      assert.deepInclude(put.json, { key: "state/notes/a.json", size: 7, sha256: sha256Hex('{"a":1}') })
      assert.strictEqual(put.headers.etag, `"${sha256Hex('{"a":1}')}"`)
      const got = yield* send("GET", "/api/objects/state/notes/a.json", { token })
      assert.strictEqual(got.status, 200)
      assert.strictEqual(got.text, '{"a":1}')
      assert.strictEqual(got.headers["content-type"], "application/octet-stream")
      assert.strictEqual(got.headers["x-object-sha256"], sha256Hex('{"a":1}'))
      const head = yield* send("HEAD", "/api/objects/state/notes/a.json", { token })
      assert.strictEqual(head.status, 200)
      assert.strictEqual(head.headers["content-length"], "7")
      assert.strictEqual(head.headers.etag, put.headers.etag)
      // Bytes of any kind: a body that is not JSON (and would be "too deep" as JSON) is stored as it is.
      const binary = new Uint8Array(4096).map((_, i) => (i % 3 === 0 ? 0x5b : i % 251))
      const stored = yield* send("PUT", "/api/objects/state/blob.bin", { token, body: binary })
      assert.strictEqual(stored.json.sha256, sha256Hex(binary))
      assert.strictEqual((yield* send("DELETE", "/api/objects/state/notes/a.json", { token })).status, 204)
      const gone = yield* send("GET", "/api/objects/state/notes/a.json", { token })
      assert.strictEqual(gone.status, 404)
      assert.strictEqual(gone.json.code, "OBJECT_NOT_FOUND")
      assert.strictEqual((yield* send("DELETE", "/api/objects/state/notes/a.json", { token })).status, 404)
    })
  )

  it.effect("If-None-Match: * creates once (201, then 412 with the current digest)", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const create = { token, headers: { "if-none-match": "*" } }
      const first = yield* send("PUT", "/api/objects/state/once.json", { ...create, body: "one" })
      assert.strictEqual(first.status, 201)
      const second = yield* send("PUT", "/api/objects/state/once.json", { ...create, body: "two" })
      assert.strictEqual(second.status, 412)
      assert.strictEqual(second.json.code, "PRECONDITION_FAILED")
      assert.strictEqual(second.json.current_sha256, sha256Hex("one"))
      assert.strictEqual((yield* send("GET", "/api/objects/state/once.json", { token })).text, "one")
    })
  )

  it.effect("If-Match races: of 8 clients shown the same digest exactly one wins, the others get 412", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const base = yield* send("PUT", "/api/objects/state/race.json", { token, body: "base" })
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, (_, i) =>
          send("PUT", "/api/objects/state/race.json", {
            token,
            body: `client-${i}`,
            headers: { "if-match": base.headers.etag! }
          })
        ),
        { concurrency: "unbounded" }
      )
      const winners = answers.flatMap((a, i) => (a.status === 200 ? [i] : []))
      assert.strictEqual(winners.length, 1, answers.map((a) => a.status).join(","))
      assert.isTrue(answers.every((a) => a.status === 200 || a.status === 412))
      const now = yield* send("GET", "/api/objects/state/race.json", { token })
      assert.strictEqual(now.text, `client-${winners[0]}`)
      // If-Match on an absent key is 412 with current_sha256 null.
      const absent = yield* send("PUT", "/api/objects/state/never.json", {
        token,
        body: "x",
        headers: { "if-match": sha256Hex("x") }
      })
      assert.strictEqual(absent.status, 412)
      assert.isNull(absent.json.current_sha256)
    })
  )

  it.effect("immutable prefixes: the same bytes again is a no-op; other bytes, If-Match and DELETE are 409", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const url = "/api/objects/releases/keel/1.0.0/manifest.json"
      assert.strictEqual((yield* send("PUT", url, { token, body: "m1" })).status, 200)
      assert.strictEqual((yield* send("PUT", url, { token, body: "m1" })).status, 200)
      for (const refused of [
        yield* send("PUT", url, { token, body: "m2" }),
        yield* send("PUT", url, { token, body: "m2", headers: { "if-match": sha256Hex("m1") } }),
        yield* send("DELETE", url, { token })
      ]) {
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.code, "NON_IMMUTABLE_RELEASE_WRITE")
      }
      assert.strictEqual((yield* send("GET", url, { token })).text, "m1")
    })
  )

  it.effect("the gateway's namespace and key rules apply", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const outside = yield* send("PUT", "/api/objects/elsewhere/x.json", { token, body: "x" })
      assert.strictEqual(outside.status, 403)
      assert.strictEqual(outside.json.code, "OBJECT_WRITE_UNAUTHORIZED")
      // A key is refused, never reinterpreted: no folding of slashes. (Dot segments, even percent-encoded,
      // are resolved by WHATWG URL clients before a request leaves.)
      // A segment too long to be a file name beside its lock is a key no store holds: refused, not a 503.
      for (const key of ["state//x.json", "state/a%5Cb", "state/a%00b", "state/x/", `state/${"n".repeat(245)}`]) {
        const refused = yield* send("PUT", `/api/objects/${key}`, { token, body: "x" })
        assert.strictEqual(refused.status, 400, key)
        assert.strictEqual(refused.json.code, "INVALID_OBJECT_KEY", key)
      }
      // A path that is not valid percent-encoded UTF-8 matches no route (the router cannot decode it).
      assert.strictEqual((yield* send("PUT", "/api/objects/state/%E0", { token, body: "x" })).status, 404)
      // Percent-encoded keys are decoded: a space is a space.
      const spaced = yield* send("PUT", "/api/objects/state/a%20b.json", { token, body: "x" })
      assert.strictEqual(spaced.json.key, "state/a b.json")
    })
  )

  it.effect("authorization by registry action, per route: none, expired, wrong action, wrong consumer, right", () =>
    Effect.gen(function* () {
      const ops = yield* opsToken
      yield* send("PUT", "/api/objects/state/auth.json", { token: ops, body: "a" })
      const expiring = yield* tokenOf("ops", ["object-read", "object-write"], [], 300)
      const wrongAction = yield* tokenOf("ops", ["service-ensure"])
      const stranger = yield* tokenOf("stranger", ["object-read", "object-write"])
      yield* Effect.sleep("400 millis")
      const routes: Array<[string, "GET" | "HEAD" | "PUT" | "DELETE", string, number]> = [
        ["list", "GET", "/api/objects?prefix=state/", 200],
        ["get", "GET", "/api/objects/state/auth.json", 200],
        ["head", "HEAD", "/api/objects/state/auth.json", 200],
        ["put", "PUT", "/api/objects/state/auth.json", 200],
        ["delete", "DELETE", "/api/objects/state/auth.json", 204]
      ]
      for (const [name, method, url, ok] of routes) {
        const body = method === "PUT" ? "b" : undefined
        const table: Array<[string, string | undefined, number, string | undefined]> = [
          ["no token", undefined, 401, "VAULT_DENIED"],
          ["expired", expiring, 401, "VAULT_DENIED"],
          ["wrong action", wrongAction, 403, "VAULT_FORBIDDEN"],
          ["wrong consumer", stranger, 403, "ACTION_NOT_HELD"],
          ["right", ops, ok, undefined]
        ]
        for (const [who, token, status, code] of table) {
          const answer = yield* send(method, url, {
            ...(token === undefined ? {} : { token }),
            ...(body ? { body } : {})
          })
          assert.strictEqual(answer.status, status, `${name} × ${who}`)
          if (code !== undefined && method !== "HEAD") assert.strictEqual(answer.json.code, code, `${name} × ${who}`)
        }
        if (method === "DELETE") yield* send("PUT", "/api/objects/state/auth.json", { token: ops, body: "a" })
      }
    })
  )

  it.effect("a host publishes its own state objects with host-state-write, not another host's", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(objectAction("state/capacity/forge-1.json", "write"), {
        action: "host-state-write",
        host: "forge-1"
      })
      assert.deepStrictEqual(objectAction("releases/keel/1.0.0/x", "write"), { action: "release-submit" })
      assert.deepStrictEqual(objectAction("state/registry/last-valid.json", "write"), { action: "object-write" })
      const token = yield* tokenOf("beacon-forge-1", ["host-state-write"], ["forge-1"])
      const own = yield* send("PUT", "/api/objects/state/capacity/forge-1.json", { token, body: '{"slots":2}' })
      assert.strictEqual(own.status, 200)
      const other = yield* send("PUT", "/api/objects/state/capacity/forge-2.json", { token, body: '{"slots":9}' })
      assert.strictEqual(other.status, 403)
      assert.strictEqual(other.json.code, "VAULT_FORBIDDEN")
      const janitor = yield* send("PUT", "/api/objects/state/janitor/forge-1.json", { token, body: "{}" })
      assert.strictEqual(janitor.status, 200)
    })
  )

  it.effect("every spelling of the /api/objects/ prefix the router accepts names the same key", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      for (const spelling of ["/API/OBJECTS/", "/api//objects/", "/Api/Objects/", "/%61pi/objects/"]) {
        const put = yield* send("PUT", `${spelling}state/spelling/Key.json`, { token, body: spelling })
        assert.strictEqual(put.status, 200, spelling)
        assert.strictEqual(put.json.key, "state/spelling/Key.json", spelling)
        const got = yield* send("GET", `${spelling}state/spelling/Key.json`, { token })
        assert.strictEqual(got.status, 200, spelling)
      }
      // A bare ';' ends the path for the router: refused, never read as another key; encoded it is part of the key.
      const semicolon = yield* send("PUT", "/api/objects/state/spelling/a;b.json", { token, body: "x" })
      assert.strictEqual(semicolon.status, 400)
      assert.strictEqual(semicolon.json.code, "INVALID_OBJECT_KEY")
      const encoded = yield* send("PUT", "/api/objects/state/spelling/a%3Bb.json?x=1", { token, body: "x" })
      assert.strictEqual(encoded.status, 200)
      assert.strictEqual(encoded.json.key, "state/spelling/a;b.json")
    })
  )

  it.effect(
    "a release's published files are never written here: a token cannot burn a version before its publication",
    () =>
      Effect.gen(function* () {
        const token = yield* opsToken
        for (const file of [
          "release.json",
          "release.sig",
          "release.tar.gz",
          "qualification.json",
          "source-revision.json",
          // A rollout's completion record: one planted first would pass for the rollout's own.
          "deployments/16/deployment.json"
        ]) {
          const refused = yield* send("PUT", `/api/objects/releases/keel/9.9.9/${file}`, { token, body: "x" })
          assert.strictEqual(refused.status, 403, file)
          assert.strictEqual(refused.json.code, "OBJECT_WRITE_UNAUTHORIZED")
        }
        assert.strictEqual((yield* send("GET", "/api/objects/releases/keel/9.9.9/release.json", { token })).status, 404)
      })
  )

  it.effect("the reconciler's run reports are immutable: written once, never replaced or deleted", () =>
    Effect.gen(function* () {
      const token = yield* opsToken
      const url = "/api/objects/state/autonomy/services/runs/2026-11-27T00-00-00.000Z-abc123.json"
      assert.strictEqual((yield* send("PUT", url, { token, body: '{"run":1}' })).status, 200)
      const replaced = yield* send("PUT", url, { token, body: '{"tampered":true}' })
      assert.strictEqual(replaced.status, 409)
      assert.strictEqual(replaced.json.code, "NON_IMMUTABLE_RELEASE_WRITE")
      assert.strictEqual((yield* send("DELETE", url, { token })).status, 409)
    })
  )

  it.effect("a beacon is never written or deleted through the object API: only PUT /api/host-health validates it", () =>
    Effect.gen(function* () {
      const token = yield* tokenOf("beacon-forge-1", ["host-health-write"], ["forge-1"])
      for (const method of ["PUT", "DELETE"] as const) {
        const refused = yield* send(method, "/api/objects/host_health/forge-1.json", {
          token,
          ...(method === "PUT" ? { body: "not a beacon" } : {})
        })
        assert.strictEqual(refused.status, 403, method)
        assert.strictEqual(refused.json.code, "OBJECT_WRITE_UNAUTHORIZED")
        assert.include(refused.json.detail, "/api/host-health")
      }
      const reader = yield* opsToken
      assert.strictEqual((yield* send("GET", "/api/objects/host_health/forge-1.json", { token: reader })).status, 404)
    })
  )

  it.effect("listing pages over 10,000 keys: every key once, in order, by next_cursor and Link", () =>
    Effect.gen(function* () {
      const store = yield* ObjectStore
      const keys = Array.from({ length: 10_000 }, (_, i) => `state/many/${String(i).padStart(5, "0")}.json`)
      for (const key of keys) yield* store.put(key, new TextEncoder().encode(key)).pipe(Effect.orDie)
      const token = yield* opsToken
      const seen: Array<string> = []
      let url: string | undefined = "/api/objects?prefix=state/many/&limit=1000"
      let pages = 0
      while (url !== undefined) {
        pages++
        assert.isAtMost(pages, 11)
        const page: Answer = yield* send("GET", url, { token })
        assert.strictEqual(page.status, 200)
        seen.push(...page.json.objects.map((o: { key: string }) => o.key))
        const link = /^<([^>]+)>; rel="next"$/.exec(page.headers.link ?? "")?.[1]
        assert.strictEqual(link === undefined, page.json.next_cursor === null)
        url = link
      }
      assert.strictEqual(pages, 10)
      assert.deepStrictEqual(seen, keys)
      const bad = yield* send("GET", "/api/objects?prefix=state/&limit=5000", { token })
      assert.strictEqual(bad.status, 400)
      assert.match(bad.json.detail, /1 to 1000/)
    })
  )
})

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "60 seconds",
  excludeTestServices: true
})("the object API client (another host's side)", (it) => {
  it.effect("a grant file → a vault token → typed reads and conditional writes; problems as typed errors", () =>
    Effect.gen(function* () {
      const port = yield* serverPort
      const local = `http://127.0.0.1:${port}`
      const { credential } = yield* vaultGrant({ consumer: "ops", actions: ["object-read", "object-write"] })
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-object-client-"))
      const grantFile = path.join(dir, "grant.json")
      fs.writeFileSync(grantFile, JSON.stringify(credential), { mode: 0o600 })
      const token = yield* vaultTokenFromGrantFile(local, grantFile)
      const client = yield* makeObjectApiClient({ controlPlaneUrl: local, token })

      const created = yield* client.put("state/client/a b.json", new TextEncoder().encode("one"), { kind: "absent" })
      assert.strictEqual(created.sha256, sha256Hex("one"))
      const refused = yield* Effect.flip(
        client.put("state/client/a b.json", new TextEncoder().encode("x"), { kind: "absent" })
      )
      assert.strictEqual(refused.code, "PRECONDITION_FAILED")
      assert.strictEqual(refused.status, 412)
      assert.strictEqual(refused.current_sha256, sha256Hex("one"))
      const swapped = yield* client.put("state/client/a b.json", new TextEncoder().encode("two"), {
        kind: "match",
        sha256: created.sha256
      })
      assert.strictEqual(swapped.sha256, sha256Hex("two"))
      assert.strictEqual(new TextDecoder().decode(Option.getOrThrow(yield* client.get("state/client/a b.json"))), "two")
      assert.strictEqual(Option.getOrThrow(yield* client.head("state/client/a b.json")).size, 3)
      // A file is streamed, not read into memory first.
      const file = path.join(dir, "payload.bin")
      fs.writeFileSync(file, Buffer.alloc(3 * 1024 * 1024, 7))
      const streamed = yield* client.putFile("state/client/payload.bin", file)
      assert.strictEqual(streamed.size, 3 * 1024 * 1024)
      assert.strictEqual(streamed.sha256, sha256Hex(fs.readFileSync(file)))
      assert.deepStrictEqual(
        (yield* client.list("state/client/")).map((h) => h.key),
        ["state/client/a b.json", "state/client/payload.bin"]
      )
      assert.isTrue(yield* client.delete("state/client/a b.json"))
      assert.isFalse(yield* client.delete("state/client/a b.json"))
      assert.isTrue(Option.isNone(yield* client.get("state/client/a b.json")))
      // A write the token's grant does not cover is the control plane's problem, typed.
      const denied = yield* Effect.flip(client.put("releases/x/1/m.json", new TextEncoder().encode("m")))
      assert.strictEqual(denied.code, "VAULT_FORBIDDEN")
      // Tokens never travel in clear text beyond loopback.
      const insecure = yield* Effect.flip(makeObjectApiClient({ controlPlaneUrl: "http://cp.example:8080", token }))
      assert.strictEqual(insecure.code, "INSECURE_URL")
    })
  )
})
