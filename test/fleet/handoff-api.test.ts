import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Either, ParseResult, Schema } from "effect"
import * as Yaml from "yaml"
import { HandoffReport, ReconcileAnswerSchema } from "../../src/contracts/fleet/HandoffReport.js"
import { sendJson, vaultToken } from "../support/controlplane.js"
import { HttpTest, rawRequest } from "../support/http.js"
import { serverPort } from "../support/market.js"

// Issue 18, the reconcile endpoints over real HTTP: every 400 rule, 401 for a missing or unheld action (read and
// apply independent; the grant names the target), 503 before any report exists, and 200 {exit_code, refusal, report} — accepted is not
// completion; a concurrent Run for another transaction is refused; Finalize completes a run.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-api-"))
const a = path.join(dir, "objects-a")
const b = path.join(dir, "objects-b")
fs.mkdirSync(path.join(a, "objects"), { recursive: true })
fs.mkdirSync(path.join(b, "objects"), { recursive: true })
fs.writeFileSync(path.join(b, "objects", "b-only.json"), "{}")
const route = path.join(dir, "objects.route")
fs.writeFileSync(route, `${b}\n`)
const runtime = path.join(dir, "current")
fs.symlinkSync(b, runtime)
const registryFile = path.join(dir, "registry.yml")
fs.writeFileSync(
  registryFile,
  Yaml.stringify({
    version: 1,
    actions: { "storage-reconcile-read": ["ops", "dashboard"], "storage-reconcile-apply": ["ops"] },
    targets: [
      {
        name: "box",
        os: "linux",
        channel: "local",
        storage: { roots: { a, b }, route_file: route, runtime: { kind: "symlink", path: runtime } }
      }
    ]
  })
)

/**
 * The answer is what the contract describes (issue 43): its report, relayed as the target wrote it, decodes with
 * the report's shape — a receipt, an interrupted or finalized one, or a bare refusal — every key known to it.
 */
const AnswerAsDescribed = Schema.Struct({ ...ReconcileAnswerSchema.fields, report: HandoffReport })
const described = <A extends { readonly body: unknown }>(answer: A): A => {
  const decoded = Schema.decodeUnknownEither(AnswerAsDescribed, { onExcessProperty: "error", errors: "all" })(
    answer.body
  )
  if (Either.isLeft(decoded)) assert.fail(ParseResult.TreeFormatter.formatErrorSync(decoded.left))
  return answer
}

const URL_ = "/api/host/storage-root-reconcile"
const q = (phase: string, transaction = "t1") => `${URL_}?target=box&transaction=${transaction}&phase=${phase}`

layer(
  HttpTest({
    surfaces: ["controlplane", "vault"],
    settings: { dataDir: path.join(dir, "data") },
    env: { KEEL_REGISTRY: registryFile }
  }),
  {
    timeout: "60 seconds",
    excludeTestServices: true
  }
)("the reconcile endpoints", (it) => {
  it.effect("400: fields exactly once and non-empty, no unknown field, a known phase fitting the method, no body", () =>
    Effect.gen(function* () {
      const ops = yield* vaultToken("ops", ["storage-reconcile-read", "storage-reconcile-apply"], ["box"])
      const bad = (method: "GET" | "POST", url: string) =>
        Effect.map(sendJson(method, url, ops), (answer) => {
          assert.strictEqual(answer.status, 400, `${method} ${url}`)
          assert.strictEqual(answer.body.code, "INVALID_RECONCILE_REQUEST", `${method} ${url}`)
          return answer.body.detail as string
        })
      assert.match(yield* bad("GET", `${URL_}?target=box&phase=status`), /transaction is required/)
      assert.match(yield* bad("GET", `${q("status")}&target=box`), /target is given 2 times/)
      assert.match(yield* bad("GET", `${URL_}?target=&transaction=t1&phase=status`), /target is empty/)
      assert.match(yield* bad("GET", `${q("status")}&verbose=1`), /unknown query field "verbose"/)
      assert.match(yield* bad("POST", q("Run")), /phase must be one of status, run, resume, rollback, finalize/)
      // A transaction id names a directory under <data dir>/handoff/: nothing that could leave it or alias another.
      for (const id of ["..", ".", "../../escape", "a%2Fb", "./t1", "t1%00", "-t1", "x".repeat(129)]) {
        assert.match(yield* bad("POST", q("run", id)), /transaction must be 1 to 128 letters, digits/, id)
      }
      assert.isFalse(fs.existsSync(path.join(dir, "escape")), "nothing written outside the data dir")
      assert.match(yield* bad("GET", q("run")), /GET takes phase=status/)
      assert.match(yield* bad("POST", q("status")), /phase=status is a GET/)
      // A body, framed either way, whatever its type.
      const port = yield* serverPort
      const withBody = yield* rawRequest(
        port,
        `POST ${q("run")} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ops}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\nConnection: close\r\n\r\n`,
        ["a=1"]
      )
      assert.strictEqual(withBody.status, 400)
      assert.match(withBody.body, /INVALID_RECONCILE_REQUEST/)
      const chunked = yield* rawRequest(
        port,
        `GET ${q("status")} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ops}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        ["2\r\n{}\r\n0\r\n\r\n"]
      )
      assert.strictEqual(chunked.status, 400)
      // A method the path does not have is a wrong method for every phase: 400 (the seed), naming the two it has.
      for (const method of ["PUT", "DELETE", "PATCH"]) {
        const wrong = yield* rawRequest(
          port,
          `${method} ${q("run")} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ops}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`
        )
        assert.strictEqual(wrong.status, 400, method)
        assert.strictEqual(JSON.parse(wrong.body).code, "INVALID_RECONCILE_REQUEST", method)
        assert.match(JSON.parse(wrong.body).detail, new RegExp(`^${method} is not a method of the reconcile path`))
        assert.strictEqual(wrong.headers.allow, "GET, POST", method)
      }
    })
  )

  it.effect("401: no token, a grant without the phase's action, a consumer the registry does not list", () =>
    Effect.gen(function* () {
      const unauthorized = (answer: { status: number; body: { code: string } }, what: string) => {
        assert.strictEqual(answer.status, 401, what)
        assert.strictEqual(answer.body.code, "STORAGE_RECONCILE_UNAUTHORIZED", what)
      }
      unauthorized(yield* sendJson("GET", q("status")), "no token")
      // Without a credential nothing is said about the request's shape: 401 before its rules are checked.
      unauthorized(yield* sendJson("GET", URL_), "no token, no fields")
      unauthorized(yield* sendJson("POST", `${URL_}?garbage=1`, "not-a-token"), "a bad token, no fields")
      const reader = yield* vaultToken("dashboard", ["storage-reconcile-read"], ["box"])
      unauthorized(yield* sendJson("POST", q("run"), reader), "read does not apply")
      const applier = yield* vaultToken("ops", ["storage-reconcile-apply"], ["box"])
      unauthorized(yield* sendJson("GET", q("status"), applier), "apply does not read")
      const notListed = yield* vaultToken("dashboard", ["storage-reconcile-apply"], ["box"])
      unauthorized(yield* sendJson("POST", q("run"), notListed), "dashboard does not hold apply")
      const elsewhere = yield* vaultToken("ops", ["storage-reconcile-read"], ["forge-9"])
      unauthorized(yield* sendJson("GET", q("status"), elsewhere), "a grant for another target")
    })
  )

  it.effect("503 before any report; 200 accepted runs, a concurrent Run refused, Status, Finalize complete", () =>
    Effect.gen(function* () {
      const ops = yield* vaultToken("ops", ["storage-reconcile-read", "storage-reconcile-apply"], ["box"])
      const none = yield* sendJson("GET", q("status", "never"), ops)
      assert.strictEqual(none.status, 503)
      assert.strictEqual(none.body.code, "STORAGE_RECONCILIATION_FAILED")
      assert.match(none.body.detail, /no report of transaction never/)

      const accepted = described(yield* sendJson("POST", q("run"), ops))
      assert.strictEqual(accepted.status, 200)
      assert.strictEqual(accepted.body.exit_code, 0)
      assert.strictEqual(accepted.body.report.transaction, "t1")
      const concurrent = described(yield* sendJson("POST", q("run", "t2"), ops))
      assert.strictEqual(concurrent.status, 200)
      assert.deepInclude(concurrent.body, { exit_code: 2, refusal: "transaction_in_progress" })

      let state = accepted.body.report.state
      for (let i = 0; i < 200 && state === "running"; i++) {
        yield* Effect.sleep("50 millis")
        state = described(yield* sendJson("GET", q("status"), ops)).body.report.state
      }
      assert.strictEqual(state, "activated_pending_lifecycle")
      assert.isTrue(fs.existsSync(path.join(a, "objects", "b-only.json")))
      const rollback = described(yield* sendJson("POST", q("rollback"), ops))
      assert.deepInclude(rollback.body, { exit_code: 2, refusal: "past_data_commit_boundary" })
      const final = described(yield* sendJson("POST", q("finalize"), ops))
      assert.strictEqual(final.status, 200)
      assert.deepInclude(final.body, { exit_code: 0, refusal: null })
      assert.strictEqual(final.body.report.state, "complete")
      assert.strictEqual(described(yield* sendJson("GET", q("status"), ops)).body.report.state, "complete")
    })
  )
})
