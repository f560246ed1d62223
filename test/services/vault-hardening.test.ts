import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger } from "effect"
import { HttpTest } from "../support/http.js"
import {
  type BeaconRouting,
  FleetActions,
  GrantIssuer,
  type HostBeacon,
  parseItemInput,
  publishBeacon,
  ServicesTest,
  Vault
} from "../support/keel.js"
import { call } from "../support/market.js"
import { runCtl } from "../support/server.js"

const SECRET = "hunter2-raw-secret-Zq8vX3"
const SECRET_NUMBER = 987654321012345
const root = fileURLToPath(new URL("../..", import.meta.url))
const registryFile = path.join(root, "examples", "registry.yml")
const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-vault-hardening-"))

const beacon = (host: string, reportedAt: string): HostBeacon => ({
  schema: "keel.beacon/v1",
  host,
  os: "linux",
  reported_at: reportedAt,
  writer_version: "test",
  disks: [{ mount: "/", total_bytes: 1000, free_bytes: 400, available_bytes: 300, error: null }],
  units: []
})

const writeFile = (name: string, text: string, mode = 0o600) => {
  const file = path.join(work, name)
  fs.rmSync(file, { force: true })
  fs.writeFileSync(file, text, { mode })
  fs.chmodSync(file, mode)
  return file
}

/** Every log line written while `effect` runs. */
const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) => lines.push(JSON.stringify(message)))
    const result = yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return { result, logs: lines.join("\n") }
  })

/** A request with a raw body (what a JSON client would refuse to send) or any method. */
const send = (method: "POST" | "PUT", url: string, body: string, bearer?: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const request = (method === "POST" ? HttpClientRequest.post(url) : HttpClientRequest.put(url)).pipe(
      HttpClientRequest.setHeaders(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      HttpClientRequest.bodyText(body, "application/json")
    )
    const response = yield* client.execute(request)
    const text = yield* response.text
    return { status: response.status, headers: response.headers as Record<string, string>, text }
  }).pipe(Effect.scoped, Effect.orDie)

const assertNoStore = (headers: Record<string, string>, what: string) => {
  assert.strictEqual(headers["cache-control"], "no-store", what)
  assert.strictEqual(headers.pragma, "no-cache", what)
}

describe("grant credential files are never quoted", () => {
  const routing = (grantFile: string): BeaconRouting => ({
    // Nothing listens there: every case below must fail before any request.
    controlPlaneUrl: "http://127.0.0.1:9",
    vaultUrl: "http://127.0.0.1:9",
    consumer: "beacon-forge-1",
    grantFile
  })
  const beaconFile = writeFile("beacon.json", JSON.stringify(beacon("forge-1", "2026-11-23T10:00:00.000Z")), 0o644)

  it.effect("publishBeacon names the file and says what is wrong, never its content", () =>
    Effect.gen(function* () {
      const cases: Array<[file: string, expected: string]> = [
        [writeFile("raw-secret", `${SECRET}\n`), "is not valid JSON"],
        [writeFile("truncated.json", `{"grant_id": "grant_1", "secret": "${SECRET}`), "is not valid JSON"],
        [writeFile("string.json", JSON.stringify(SECRET)), "is not a grant credential"],
        [
          writeFile(
            "number.json",
            JSON.stringify({ grant_id: "g", consumer: "beacon-forge-1", secret: SECRET_NUMBER })
          ),
          "secret: Expected string"
        ],
        [
          writeFile(
            "object.json",
            JSON.stringify({ grant_id: "g", consumer: "beacon-forge-1", secret: { value: SECRET } })
          ),
          "secret: Expected string"
        ]
      ]
      for (const [file, expected] of cases) {
        const failure = yield* Effect.flip(publishBeacon(beaconFile, routing(file)))
        assert.strictEqual(failure.reason, "grant_unreadable", file)
        assert.include(failure.detail, file)
        assert.include(failure.detail, expected)
        assert.notInclude(failure.detail, SECRET)
        assert.notInclude(failure.detail, String(SECRET_NUMBER))
        assert.notInclude(failure.detail, SECRET.slice(0, 8))
      }
    })
  )

  it("ctl host publish-beacon prints the file and `not valid JSON` on stderr, not the secret", async () => {
    const grantFile = writeFile("raw-grant", SECRET)
    const run = await runCtl(["host", "publish-beacon", beaconFile], {
      ...process.env,
      KEEL_DATA_DIR: path.join(work, "publish-data"),
      KEEL_LOG_LEVEL: "warning",
      KEEL_CONTROL_PLANE_URL: "http://127.0.0.1:9",
      KEEL_VAULT_URL: "http://127.0.0.1:9",
      KEEL_BEACON_CONSUMER: "beacon-forge-1",
      KEEL_BEACON_GRANT_FILE: grantFile
    })
    assert.strictEqual(run.code, 1, run.stderr)
    assert.include(run.stderr, `grant_unreadable: ${grantFile} is not valid JSON`)
    assert.notInclude(run.stderr + run.stdout, SECRET.slice(0, 8))
  }, 120_000)
})

layer(HttpTest({ surfaces: ["vault", "controlplane"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "30 seconds",
  excludeTestServices: true
})("the vault surface", (it) => {
  it.effect("a mistyped field is a 400 naming the field and its type, never the value", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const { credential } = yield* vault.createGrant({
        consumer: "beacon-forge-1",
        actions: ["host-health-write"],
        items: [],
        hosts: ["forge-1"],
        ttlMillis: 3_600_000
      })
      const cases: Array<[body: string, field: string, type: string]> = [
        [JSON.stringify({ ...credential, secret: SECRET_NUMBER }), "secret", "string"],
        [JSON.stringify({ ...credential, secret: { value: SECRET } }), "secret", "string"],
        [JSON.stringify({ ...credential, secret: [SECRET] }), "secret", "string"],
        [JSON.stringify({ ...credential, secret: true }), "secret", "string"],
        [JSON.stringify({ ...credential, grant_id: { secret: SECRET } }), "grant_id", "string"],
        [JSON.stringify({ ...credential, consumer: SECRET_NUMBER }), "consumer", "string"],
        [
          JSON.stringify({ ...credential, scope: { actions: SECRET, hosts: [], items: [] } }),
          "scope.actions",
          "must be an array"
        ],
        [
          JSON.stringify({ ...credential, scope: { actions: [SECRET_NUMBER], hosts: [], items: [] } }),
          "scope.actions.0",
          "string"
        ],
        [JSON.stringify({ grant_id: credential.grant_id, consumer: credential.consumer }), "secret", "missing"],
        [JSON.stringify(SECRET), "(root)", "must be an object"]
      ]
      const { logs, result } = yield* capturingLogs(
        Effect.forEach(cases, ([body]) => send("POST", "/v1/vault/token", body))
      )
      result.forEach((answer, i) => {
        const [, field, type] = cases[i]!
        assert.strictEqual(answer.status, 400, answer.text)
        assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json/)
        const problem = JSON.parse(answer.text)
        assert.strictEqual(problem.code, "VALIDATION_FAILED")
        assert.include(problem.detail, `${field}: `, answer.text)
        assert.include(problem.detail, type, answer.text)
        for (const leak of [SECRET, String(SECRET_NUMBER), "actual", "true"])
          assert.notInclude(answer.text, leak, `case ${i}: ${answer.text}`)
        assertNoStore(answer.headers, `case ${i}`)
      })
      assert.notInclude(logs, SECRET)
      assert.notInclude(logs, String(SECRET_NUMBER))
    })
  )

  it.effect("a secret pasted into the wrong field reaches no answer, log line or audit row", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const sql = yield* SqlClient.SqlClient
      const { credential } = yield* vault.createGrant({
        consumer: "beacon-forge-1",
        actions: ["host-health-write"],
        items: [],
        hosts: ["forge-1"],
        ttlMillis: 3_600_000
      })
      const { logs, result } = yield* capturingLogs(
        Effect.forEach(
          [
            { grant_id: SECRET, consumer: SECRET, secret: SECRET },
            { ...credential, consumer: SECRET },
            { ...credential, grant_id: credential.secret }
          ],
          (body) => send("POST", "/v1/vault/token", JSON.stringify(body))
        )
      )
      for (const answer of result) {
        assert.strictEqual(answer.status, 401, answer.text)
        assert.notInclude(answer.text, SECRET)
        assert.notInclude(answer.text, credential.secret)
      }
      assert.notInclude(logs, SECRET)
      const audit = JSON.stringify(yield* sql`SELECT * FROM vault_audit`)
      assert.include(audit, "token_refused")
      assert.notInclude(audit, SECRET)
      assert.notInclude(audit, credential.secret)
    })
  )

  it.effect("an incomplete credential lists every missing or invalid field, never quoting a value", () =>
    Effect.gen(function* () {
      const empty = yield* send("POST", "/v1/vault/token", "{}")
      assert.strictEqual(empty.status, 400, empty.text)
      assert.sameMembers(
        JSON.parse(empty.text).errors.map((e: { path: string }) => e.path),
        ["grant_id", "consumer", "secret"]
      )
      const wrong = yield* send("POST", "/v1/vault/token", JSON.stringify({ grant_id: 7, secret: [SECRET] }))
      assert.strictEqual(wrong.status, 400, wrong.text)
      assert.sameMembers(
        JSON.parse(wrong.text).errors.map((e: { path: string }) => e.path),
        ["grant_id", "consumer", "secret"]
      )
      assert.notInclude(wrong.text, SECRET.slice(0, 8))
      assertNoStore(wrong.headers, "{}")
    })
  )

  it.effect("a body that is not JSON is a 400 that does not quote it", () =>
    Effect.gen(function* () {
      for (const body of [
        `{"grant_id": "g", "consumer": "c", "secret": ${SECRET}}`,
        SECRET,
        `{"secret": "${SECRET}"`
      ]) {
        const answer = yield* send("POST", "/v1/vault/token", body)
        assert.strictEqual(answer.status, 400, answer.text)
        assert.strictEqual(JSON.parse(answer.text).code, "INVALID_JSON")
        assert.notInclude(answer.text, SECRET.slice(0, 8))
        assertNoStore(answer.headers, body)
      }
    })
  )

  it.effect("every vault answer is Cache-Control: no-store, the token and the item value above all", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      yield* vault.putItem("fleet-ssh", { private_key: SECRET })
      const { credential } = yield* vault.createGrant({
        consumer: "recover",
        actions: [],
        items: ["fleet-ssh"],
        hosts: [],
        ttlMillis: 3_600_000
      })
      const token = yield* call("POST", "/v1/vault/token", { body: credential })
      assert.strictEqual(token.status, 200)
      const read = yield* call("GET", "/v1/vault/items/fleet-ssh/private_key", { bearer: token.body.token })
      assert.deepStrictEqual(read.body, { value: SECRET })
      const answers = {
        token,
        read,
        denied: yield* call("POST", "/v1/vault/token", { body: { ...credential, secret: "wrong" } }),
        noToken: yield* call("GET", "/v1/vault/items/fleet-ssh/private_key"),
        forbidden: yield* call("GET", "/v1/vault/items/other/x", { bearer: token.body.token }),
        noField: yield* call("GET", "/v1/vault/items/fleet-ssh/nope", { bearer: token.body.token }),
        // Answered before any vault handler: the body guard and the router.
        tooDeep: yield* call("POST", "/v1/vault/token", { rawBody: `${"[".repeat(70)}${"]".repeat(70)}` }),
        noRoute: yield* call("GET", "/v1/vault/nosuch")
      }
      assert.deepStrictEqual(
        Object.values(answers).map((a) => a.status),
        [200, 200, 401, 401, 403, 404, 400, 404]
      )
      for (const [name, answer] of Object.entries(answers)) assertNoStore(answer.headers, name)
    })
  )

  it.effect("a 403 on PUT /api/host-health is in the vault audit, without the token", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const sql = yield* SqlClient.SqlClient
      const { credential, grant } = yield* vault.createGrant({
        consumer: "beacon-forge-2",
        actions: ["host-health-write"],
        items: [],
        hosts: ["forge-2"],
        ttlMillis: 3_600_000
      })
      const { token } = yield* vault.exchange(credential)
      const before = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM vault_audit WHERE event = 'access_refused'`
      const refused = yield* send(
        "PUT",
        "/api/host-health",
        JSON.stringify(beacon("forge-1", "2026-11-23T12:00:00.000Z")),
        token
      )
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(JSON.parse(refused.text).code, "VAULT_FORBIDDEN")
      const rows = yield* sql<{ event: string; consumer: string; grant_id: string; detail: string }>`
        SELECT event, consumer, grant_id, detail FROM vault_audit WHERE event = 'access_refused' ORDER BY id`
      assert.strictEqual(rows.length, Number(before[0]!.n) + 1)
      const row = rows[rows.length - 1]!
      assert.strictEqual(row.grant_id, grant.id)
      assert.strictEqual(row.consumer, "beacon-forge-2")
      assert.include(row.detail, "forge-1")
      const everything = JSON.stringify(yield* sql`SELECT * FROM vault_audit`)
      assert.notInclude(everything, token)
      assert.notInclude(everything, credential.secret)
      // Its own host is still accepted, and not audited as a refusal.
      const ok = yield* send(
        "PUT",
        "/api/host-health",
        JSON.stringify(beacon("forge-2", "2026-11-23T12:00:00.000Z")),
        token
      )
      assert.strictEqual(ok.status, 200, ok.text)
      const after = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM vault_audit WHERE event = 'access_refused'`
      assert.strictEqual(Number(after[0]!.n), rows.length)
    })
  )
})

const servicesWith = (env: Record<string, string>) =>
  ServicesTest().pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("GrantIssuer (ctl vault grant create)", () => {
  const request = (out: string) => ({
    consumer: "beacon-forge-1",
    actions: ["host-health-write"],
    hosts: ["forge-1"],
    items: [] as Array<string>,
    ttlMillis: 3_600_000,
    out,
    force: false
  })

  it.effect("refuses unknown actions, hosts and items, and grants nothing", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const issuer = yield* GrantIssuer
      yield* vault.putItem("fleet-ssh", { private_key: SECRET })
      const out = path.join(work, "refused.json")
      const cases: Array<[Partial<ReturnType<typeof request>>, string, string]> = [
        [{ actions: ["host-health-write", "host-health-rwite"] }, "UNKNOWN_ACTION", "host-health-rwite"],
        [{ hosts: ["forge-1", "forge-9"] }, "UNKNOWN_HOST", "forge-9 is not a target of the registry"],
        [{ items: ["fleet-ssh", "ghost"] }, "UNKNOWN_ITEM", "no item ghost"]
      ]
      for (const [change, code, detail] of cases) {
        const refused = yield* Effect.flip(issuer.issue({ ...request(out), ...change }))
        assert.strictEqual(refused._tag, "GrantRefused")
        assert.strictEqual(refused.code, code)
        assert.include(refused.detail, detail)
      }
      const unknownAction = yield* Effect.flip(issuer.issue({ ...request(out), actions: ["nope"] }))
      for (const action of FleetActions) assert.include(unknownAction.detail, action)
      assert.deepStrictEqual(yield* vault.listGrants, [])
      assert.isFalse(fs.existsSync(out))
      // What is known passes: every registry action, a registry target, an item the vault holds.
      const { credentialFile, grant } = yield* issuer.issue({
        ...request(out),
        actions: [...FleetActions],
        items: ["fleet-ssh"]
      })
      assert.strictEqual(credentialFile, out)
      assert.deepStrictEqual(grant.hosts, ["forge-1"])
      assert.strictEqual(fs.statSync(out).mode & 0o777, 0o600)
    }).pipe(Effect.provide(servicesWith({ KEEL_REGISTRY: registryFile })))
  )

  it.effect("with no readable registry a host cannot be checked, so it is refused with that reason", () =>
    Effect.gen(function* () {
      const issuer = yield* GrantIssuer
      const missing = path.join(work, "no-such-registry.yml")
      const refused = yield* Effect.flip(issuer.issue(request(path.join(work, "unchecked.json"))))
      assert.strictEqual(refused.code, "REGISTRY_UNAVAILABLE")
      assert.include(refused.detail, missing)
      assert.deepStrictEqual(yield* (yield* Vault).listGrants, [])
      // A grant that names no host needs no registry.
      yield* (yield* Vault).putItem("runner", { token: SECRET })
      const itemsOnly = yield* issuer.issue({
        ...request(path.join(work, "items-only.json")),
        actions: [],
        hosts: [],
        items: ["runner"]
      })
      assert.deepStrictEqual(itemsOnly.grant.items, ["runner"])
    }).pipe(Effect.provide(servicesWith({ KEEL_REGISTRY: path.join(work, "no-such-registry.yml") })))
  )

  it.effect("an existing credential file is refused (and kept) unless forced; forced, it is replaced 0600", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const issuer = yield* GrantIssuer
      const out = writeFile("existing.json", "the old credential\n", 0o600)
      const refused = yield* Effect.flip(issuer.issue(request(out)))
      assert.strictEqual(refused.code, "CREDENTIAL_FILE_EXISTS")
      assert.include(refused.detail, out)
      assert.include(refused.detail, "--force")
      assert.strictEqual(fs.readFileSync(out, "utf8"), "the old credential\n")
      assert.deepStrictEqual(yield* vault.listGrants, [])
      fs.chmodSync(out, 0o644)
      const forced = yield* issuer.issue({ ...request(out), force: true })
      assert.strictEqual(JSON.parse(fs.readFileSync(out, "utf8")).grant_id, forced.grant.id)
      assert.strictEqual(fs.statSync(out).mode & 0o777, 0o600)
      assert.deepStrictEqual(
        fs.readdirSync(work).filter((name) => name.startsWith("existing.json.")),
        [],
        "no temporary file is left"
      )
      // A credential that cannot be written (a directory is in the way, even forced) revokes its grant.
      const dir = path.join(work, "a-directory.json")
      fs.mkdirSync(dir, { recursive: true })
      const unwritable = yield* Effect.flip(issuer.issue({ ...request(dir), force: true }))
      assert.strictEqual(unwritable.code, "CREDENTIAL_WRITE_FAILED")
      const grants = yield* vault.listGrants
      assert.strictEqual(grants.length, 2)
      assert.isNull(grants.find((g) => g.id === forced.grant.id)?.revoked_at)
      assert.isNotNull(grants.find((g) => g.id !== forced.grant.id)?.revoked_at)
      assert.deepStrictEqual(
        fs.readdirSync(work).filter((name) => name.startsWith("a-directory.json.")),
        [],
        "no temporary file is left"
      )
    }).pipe(Effect.provide(servicesWith({ KEEL_REGISTRY: registryFile })))
  )
})

describe("ctl vault item put stdin", () => {
  const KEY = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    `QyNTUxOQAAACD${SECRET}AAAAAECAwQFBgc=`,
    "-----END OPENSSH PRIVATE KEY-----",
    ""
  ].join("\n")

  it.effect("parses name=value lines, a JSON object, or one verbatim value; refusals never quote stdin", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* parseItemInput(`password=${SECRET}\nuser=keel\n`), {
        password: SECRET,
        user: "keel"
      })
      assert.deepStrictEqual(yield* parseItemInput(`a=x=y\r\n`), { a: "x=y" })
      assert.deepStrictEqual(yield* parseItemInput(JSON.stringify({ private_key: KEY })), { private_key: KEY })
      assert.deepStrictEqual(yield* parseItemInput(KEY, "private_key"), { private_key: KEY })
      const refusals: Array<[string, string | undefined, string]> = [
        // The docs' old example: a multi-line value through printf 'private_key=%s\n'.
        [`private_key=${KEY}`, undefined, "line 2 of stdin is not name=value"],
        [`{"private_key": ${SECRET}}`, undefined, "not valid JSON"],
        [JSON.stringify({ private_key: SECRET_NUMBER }), undefined, "field private_key must be a string"],
        [JSON.stringify({ private_key: { value: SECRET } }), undefined, "field private_key must be a string"],
        [`a=${SECRET}\na=again`, undefined, "field a is given twice"],
        ["", "private_key", "stdin is empty"]
      ]
      for (const [text, field, detail] of refusals) {
        const refused = yield* Effect.flip(parseItemInput(text, field))
        assert.strictEqual(refused.code, "VAULT_INVALID")
        assert.include(refused.detail, detail)
        assert.notInclude(refused.detail, SECRET)
        assert.notInclude(refused.detail, String(SECRET_NUMBER))
      }
    })
  )

  it("the docs' example stores a multi-line key exactly; the old printf form is refused without echo", async () => {
    const dataDir = path.join(work, "item-data")
    const env = { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_LOG_LEVEL: "warning" }
    const keyFile = writeFile("id_ed25519", KEY)
    const ctl = (args: Array<string>, input: string | Buffer) => runCtl(args, env, input)
    // docs/vault.md: ctl vault item put fleet-ssh --field private_key < id_ed25519
    const stored = await ctl(["vault", "item", "put", "fleet-ssh", "--field", "private_key"], fs.readFileSync(keyFile))
    assert.strictEqual(stored.code, 0, stored.stderr)
    const read = await ctl(["vault", "item", "get", "fleet-ssh", "--json"], "")
    assert.deepStrictEqual(JSON.parse(read.stdout), { private_key: KEY })
    // The old example: printf 'private_key=%s\n' "$(cat id_ed25519)" | ctl vault item put fleet-ssh
    const old = await ctl(["vault", "item", "put", "fleet-ssh"], `private_key=${KEY.trimEnd()}\n`)
    assert.strictEqual(old.code, 1)
    assert.include(old.stderr, "line 2 of stdin is not name=value")
    assert.notInclude(old.stderr + old.stdout, SECRET.slice(0, 8))
    const json = await ctl(["vault", "item", "put", "db"], `{"password": ${SECRET}}`)
    assert.strictEqual(json.code, 1)
    assert.include(json.stderr, "not valid JSON")
    assert.notInclude(json.stderr + json.stdout, SECRET.slice(0, 8))
    // The refused puts left the stored key as it was.
    assert.deepStrictEqual(JSON.parse((await ctl(["vault", "item", "get", "fleet-ssh", "--json"], "")).stdout), {
      private_key: KEY
    })
    // What is not there has its own code.
    for (const [args, code] of [
      [["vault", "item", "get", "fleet-ssh", "--field", "nope", "--json"], "VAULT_FIELD_NOT_FOUND"],
      [["vault", "item", "get", "ghost", "--json"], "VAULT_ITEM_NOT_FOUND"],
      [["vault", "item", "rm", "ghost", "--json"], "VAULT_ITEM_NOT_FOUND"],
      [["vault", "grant", "revoke", "grant_nope", "--json"], "VAULT_GRANT_NOT_FOUND"]
    ] as const) {
      const missing = await ctl([...args], "")
      assert.strictEqual(missing.code, 1, args.join(" "))
      assert.strictEqual(JSON.parse(missing.stdout).error.code, code, args.join(" "))
    }
  }, 300_000)
})

describe("ctl vault grant create", () => {
  it("refuses unknown actions, hosts, items and an existing --out without --force, with a code", async () => {
    const dataDir = path.join(work, "grant-data")
    const env = { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_REGISTRY: registryFile, KEEL_LOG_LEVEL: "warning" }
    const out = path.join(work, "cli-grant.json")
    const ctl = (...args: Array<string>) =>
      runCtl(["vault", "grant", "create", "--consumer", "beacon-forge-1", "--out", out, ...args], env)
    const refusals: Array<[Array<string>, string, string]> = [
      [["--action", "host-health-wrte", "--host", "forge-1"], "UNKNOWN_ACTION", "unknown action host-health-wrte"],
      [["--action", "host-health-write", "--host", "web-1"], "UNKNOWN_HOST", "web-1 is not a target of the registry"],
      [["--item", "ghost"], "UNKNOWN_ITEM", "the vault holds no item ghost"]
    ]
    for (const [args, code, detail] of refusals) {
      const refused = await ctl(...args, "--json")
      assert.strictEqual(refused.code, 1, refused.stdout)
      assert.include(refused.stderr, detail)
      assert.strictEqual(JSON.parse(refused.stdout).error.code, code)
    }
    assert.isFalse(fs.existsSync(out))
    const first = await ctl("--action", "host-health-write", "--host", "forge-1", "--json")
    assert.strictEqual(first.code, 0, first.stderr)
    const written = fs.readFileSync(out, "utf8")
    const again = await ctl("--action", "host-health-write", "--host", "forge-1")
    assert.strictEqual(again.code, 1)
    assert.include(again.stderr, `${out} already exists; pass --force to replace it`)
    assert.strictEqual(fs.readFileSync(out, "utf8"), written)
    const forced = await ctl("--action", "host-health-write", "--host", "forge-1", "--force", "--json")
    assert.strictEqual(forced.code, 0, forced.stderr)
    assert.strictEqual(JSON.parse(fs.readFileSync(out, "utf8")).grant_id, JSON.parse(forced.stdout).grant.id)
    assert.strictEqual(fs.statSync(out).mode & 0o777, 0o600)
  }, 300_000)

  it("an --out that is a directory, or under a file, is a coded refusal (exit 1, one JSON document), never a stack trace", async () => {
    const dataDir = path.join(work, "grant-out-data")
    const env = { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_LOG_LEVEL: "warning" }
    const grant = (out: string) =>
      runCtl(
        ["vault", "grant", "create", "--consumer", "c", "--action", "host-health-write", "--out", out, "--json"],
        env
      )
    const directory = path.join(work, "out-is-a-directory")
    fs.mkdirSync(directory, { recursive: true })
    const underFile = path.join(writeFile("out-parent-file", "a file\n"), "grant.json")
    for (const [out, code] of [
      [directory, "CREDENTIAL_FILE_EXISTS"],
      [underFile, "CREDENTIAL_WRITE_FAILED"],
      // A missing directory is not created (and under /proc a recursive mkdir never returned).
      [path.join(work, "no-such-dir", "grant.json"), "CREDENTIAL_WRITE_FAILED"],
      ["/proc/nope/grant.json", "CREDENTIAL_WRITE_FAILED"]
    ] as const) {
      const refused = await grant(out)
      assert.strictEqual(refused.code, 1, refused.stderr)
      assert.strictEqual(JSON.parse(refused.stdout).error.code, code, out)
      assert.match(refused.stderr, /^ctl: [^\n]+\n$/)
    }
    assert.isFalse(fs.existsSync(path.join(work, "no-such-dir")))
    // Refused before anything was granted: no live grant whose secret is nowhere.
    const listed = await runCtl(["vault", "grant", "list", "--json"], env)
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.deepStrictEqual(
      (JSON.parse(listed.stdout) as Array<{ revoked_at: string | null }>).filter((g) => g.revoked_at === null),
      []
    )
  }, 300_000)
})

describe("the vault's master key", () => {
  it("a bad KEEL_VAULT_KEY, or a key file readable by others, is a one-line configuration error", async () => {
    const dataDir = path.join(work, "key-data")
    const env = { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_LOG_LEVEL: "warning" }
    const get = (extra: Record<string, string> = {}) =>
      runCtl(["vault", "item", "get", "x", "--json"], { ...env, ...extra })
    const stored = await runCtl(["vault", "item", "put", "x"], env, '{"a": "b"}')
    assert.strictEqual(stored.code, 0, stored.stderr)
    const badKey = await get({ KEEL_VAULT_KEY: "not-a-key" })
    assert.strictEqual(badKey.code, 1)
    assert.strictEqual(JSON.parse(badKey.stdout).error.code, "INVALID_CONFIGURATION")
    assert.match(badKey.stderr, /^ctl: invalid configuration: .*KEEL_VAULT_KEY.*must be a base64 32-byte key.*\n$/)
    assert.notInclude(badKey.stderr + badKey.stdout, "not-a-key")
    fs.chmodSync(path.join(dataDir, "vault.key"), 0o644)
    const exposed = await get()
    assert.strictEqual(exposed.code, 1)
    assert.match(
      exposed.stderr,
      /^ctl: invalid configuration: .*vault\.key is readable by others \(mode 644\); chmod 600 it.*\n$/
    )
    fs.chmodSync(path.join(dataDir, "vault.key"), 0o600)
    assert.deepStrictEqual(JSON.parse((await get()).stdout), { a: "b" })
  }, 300_000)
})
