import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { SqlClient } from "@effect/sql"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Logger, TestClock } from "effect"
import { HttpTest } from "../support/http.js"
import { ServicesTest, Vault } from "../support/keel.js"
import { call } from "../support/market.js"
import { runCtlOk } from "../support/server.js"

const SECRET = "hunter2-very-secret-value"

/** Every log line written while `effect` runs, so a test can prove no secret reached a log. */
const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ message }) => lines.push(JSON.stringify(message)))
    const result = yield* effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return { result, logs: lines.join("\n") }
  })

describe("the embedded vault", () => {
  it.effect("items are sealed at rest; tampering or moving ciphertext between items is detected", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const sql = yield* SqlClient.SqlClient
      yield* vault.putItem("db", { password: SECRET, user: "keel" })
      yield* vault.putItem("other", { password: "another" })
      assert.deepStrictEqual(yield* vault.getItem("db"), { password: SECRET, user: "keel" })
      const rows = yield* sql<{ ciphertext: Uint8Array }>`SELECT ciphertext FROM vault_items WHERE name = 'db'`
      assert.notInclude(Buffer.from(rows[0]!.ciphertext).toString("latin1"), SECRET)
      assert.deepStrictEqual(yield* vault.listItems, [
        { name: "db", fields: ["password", "user"] },
        { name: "other", fields: ["password"] }
      ])
      // Moving another item's sealed bytes under this name fails authentication (the name is bound in).
      yield* sql`UPDATE vault_items SET nonce = (SELECT nonce FROM vault_items WHERE name = 'other'),
        ciphertext = (SELECT ciphertext FROM vault_items WHERE name = 'other'),
        tag = (SELECT tag FROM vault_items WHERE name = 'other') WHERE name = 'db'`
      assert.strictEqual((yield* Effect.flip(vault.getItem("db")))._tag, "VaultCorrupt")
      // Flipping one byte of a ciphertext is detected too.
      const other = yield* sql<{ ciphertext: Uint8Array }>`SELECT ciphertext FROM vault_items WHERE name = 'other'`
      const flipped = Buffer.from(other[0]!.ciphertext)
      flipped[0] = (flipped[0] ?? 0) ^ 1
      yield* sql`UPDATE vault_items SET ciphertext = ${flipped} WHERE name = 'other'`
      assert.strictEqual((yield* Effect.flip(vault.getItem("other")))._tag, "VaultCorrupt")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("a token outlives neither its TTL (15 min) nor its grant", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const long = yield* vault.createGrant({
        consumer: "beacon-web-1",
        actions: ["host-health-write"],
        items: [],
        hosts: ["web-1"],
        ttlMillis: 86_400_000
      })
      const issued = yield* vault.exchange(long.credential)
      assert.strictEqual(issued.expiresAt, 15 * 60_000)
      assert.strictEqual(
        (yield* vault.authorize(issued.token, { action: "host-health-write", host: "web-1" })).id,
        long.grant.id
      )
      yield* TestClock.adjust("15 minutes")
      assert.strictEqual((yield* Effect.flip(vault.authorize(issued.token, {})))._tag, "VaultDenied")

      const short = yield* vault.createGrant({
        consumer: "beacon-web-1",
        actions: ["host-health-write"],
        items: [],
        hosts: ["web-1"],
        ttlMillis: 5 * 60_000
      })
      const capped = yield* vault.exchange(short.credential)
      assert.strictEqual(capped.expiresAt, 15 * 60_000 + 5 * 60_000) // the grant ends first
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual((yield* Effect.flip(vault.authorize(capped.token, {})))._tag, "VaultDenied")
      assert.strictEqual((yield* Effect.flip(vault.exchange(short.credential)))._tag, "VaultDenied")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("an item#field grant reads that field only (a build or delivery secret)", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      yield* vault.putItem("build-secrets", { token: SECRET, other: "not for builders" })
      const { credential } = yield* vault.createGrant({
        consumer: "builder-forge",
        actions: [],
        items: ["build-secrets#token"],
        hosts: [],
        ttlMillis: 3_600_000
      })
      const { token } = yield* vault.exchange(credential)
      assert.strictEqual(yield* vault.readField(token, "build-secrets#token"), SECRET)
      assert.strictEqual((yield* Effect.flip(vault.readField(token, "build-secrets#other")))._tag, "VaultForbidden")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("a revoked grant's token is refused at once; scope is exact; wrong secrets are refused", () =>
    Effect.gen(function* () {
      const vault = yield* Vault
      yield* vault.putItem("runner", { token: SECRET })
      const { credential, grant } = yield* vault.createGrant({
        consumer: "installer",
        actions: ["host-health-write"],
        items: ["runner"],
        hosts: ["web-1"],
        ttlMillis: 3_600_000
      })
      const { token } = yield* vault.exchange(credential)
      assert.strictEqual(yield* vault.readField(token, "runner#token"), SECRET)
      assert.strictEqual((yield* Effect.flip(vault.readField(token, "other#x")))._tag, "VaultForbidden")
      const otherHost = yield* Effect.flip(vault.authorize(token, { action: "host-health-write", host: "web-2" }))
      assert.strictEqual(otherHost._tag, "VaultForbidden")
      const otherAction = yield* Effect.flip(vault.authorize(token, { action: "storage-reconcile-apply" }))
      assert.strictEqual(otherAction._tag, "VaultForbidden")
      assert.strictEqual((yield* Effect.flip(vault.exchange({ ...credential, secret: "wrong" })))._tag, "VaultDenied")
      assert.strictEqual(
        (yield* Effect.flip(vault.exchange({ ...credential, consumer: "someone-else" })))._tag,
        "VaultDenied"
      )
      assert.isTrue(yield* vault.revokeGrant(grant.id))
      assert.strictEqual((yield* Effect.flip(vault.readField(token, "runner#token")))._tag, "VaultDenied")
      const sql = yield* SqlClient.SqlClient
      const audit = yield* sql<{
        event: string
        detail: string | null
      }>`SELECT event, detail FROM vault_audit ORDER BY id`
      const events = audit.map((a) => a.event)
      for (const event of [
        "grant_created",
        "token_issued",
        "field_read",
        "access_refused",
        "token_refused",
        "grant_revoked"
      ])
        assert.include(events, event)
      const everything = JSON.stringify(audit)
      assert.notInclude(everything, SECRET)
      assert.notInclude(everything, credential.secret)
      assert.notInclude(everything, token)
    }).pipe(Effect.provide(ServicesTest()))
  )
})

layer(HttpTest({ surfaces: ["vault"] }), { timeout: "30 seconds", excludeTestServices: true })("/v1/vault", (it) => {
  it.effect("exchanges a grant for a token and reads an item; refusals carry no secret", () =>
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
      const { logs, result } = yield* capturingLogs(
        Effect.gen(function* () {
          const exchanged = yield* call("POST", "/v1/vault/token", { body: credential })
          const read = yield* call("GET", "/v1/vault/items/fleet-ssh/private_key", { bearer: exchanged.body.token })
          const denied = yield* call("POST", "/v1/vault/token", { body: { ...credential, secret: `${SECRET}-guess` } })
          const noToken = yield* call("GET", "/v1/vault/items/fleet-ssh/private_key")
          const forbidden = yield* call("GET", "/v1/vault/items/other/x", { bearer: exchanged.body.token })
          return { exchanged, read, denied, noToken, forbidden }
        })
      )
      assert.strictEqual(result.exchanged.status, 200)
      assert.strictEqual(result.exchanged.body.consumer, "recover")
      assert.match(result.exchanged.body.token, /^kvt_/)
      assert.deepStrictEqual(result.read.body, { value: SECRET })
      assert.strictEqual(result.denied.status, 401)
      assert.strictEqual(result.denied.body.code, "VAULT_DENIED")
      assert.strictEqual(result.noToken.status, 401)
      assert.strictEqual(result.forbidden.status, 403)
      for (const answer of [result.denied, result.noToken, result.forbidden]) {
        assert.notInclude(JSON.stringify(answer.body), SECRET)
        assert.notInclude(JSON.stringify(answer.body), credential.secret)
      }
      assert.notInclude(logs, SECRET)
      assert.notInclude(logs, credential.secret)
    })
  )
})

describe("ctl vault", () => {
  it("reads secret values from stdin, never argv, and writes grant credentials owner-only", async () => {
    const root = fileURLToPath(new URL("../..", import.meta.url))
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-vault-")), "data")
    const registry = path.join(root, "examples", "registry.yml")
    const env = { ...process.env, KEEL_DATA_DIR: dataDir, KEEL_REGISTRY: registry, KEEL_LOG_LEVEL: "warning" }
    const ctl = (args: Array<string>, input?: string) => runCtlOk(args, env, input)
    await ctl(["vault", "item", "put", "db"], `password=${SECRET}\nuser=keel\n`)
    // The value exactly: no newline added.
    assert.strictEqual(await ctl(["vault", "item", "get", "db", "--field", "password"]), SECRET)
    // put replaces the item; --merge keeps the fields it does not name.
    await ctl(["vault", "item", "put", "db", "--merge"], "port=5432\n")
    assert.deepStrictEqual(JSON.parse(await ctl(["vault", "item", "get", "db", "--json"])), {
      password: SECRET,
      user: "keel",
      port: "5432"
    })
    await ctl(["vault", "item", "put", "db"], `password=${SECRET}\nuser=keel\n`)
    assert.deepStrictEqual(Object.keys(JSON.parse(await ctl(["vault", "item", "get", "db", "--json"]))).sort(), [
      "password",
      "user"
    ])
    assert.notInclude(await ctl(["vault", "item", "list"]), SECRET)
    const keyFile = path.join(dataDir, "vault.key")
    assert.strictEqual(fs.statSync(keyFile).mode & 0o777, 0o600)
    const out = path.join(dataDir, "grants", "beacon.json")
    fs.mkdirSync(path.dirname(out)) // the directory must exist: a grant is never written where nobody chose
    const created = JSON.parse(
      await ctl([
        "vault",
        "grant",
        "create",
        "--consumer",
        "beacon-forge-1",
        "--action",
        "host-health-write",
        "--host",
        "forge-1",
        "--out",
        out,
        "--json"
      ])
    )
    assert.strictEqual(fs.statSync(out).mode & 0o777, 0o600)
    const credential = JSON.parse(fs.readFileSync(out, "utf8"))
    assert.strictEqual(credential.grant_id, created.grant.id)
    assert.notInclude(JSON.stringify(created), credential.secret)
    assert.include(await ctl(["vault", "grant", "revoke", created.grant.id]), "revoked")
  }, 300_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})
