import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"

// Issue 43: `ctl host storage-root-reconcile` reaches the control plane through its typed client (StorageApi), not a
// hand-built request. What it shows must not change: the answer as sent, a refusal named by the control plane's
// code or else by its HTTP status, an answer that is not JSON named with its status. A stand-in control plane (and
// vault) answers what a real one would not: a proxy's 502 page, a 503 without a code.

interface Seen {
  readonly method: string
  readonly url: string
  readonly authorization: string | undefined
}

const standIn = (answer: { status: number; type: string; body: string }) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; seen: Array<Seen>; server: http.Server }>((resume) => {
      const seen: Array<Seen> = []
      const server = http.createServer((request, response) => {
        request.resume()
        request.on("end", () => {
          if (request.url === "/v1/vault/token") {
            response.writeHead(200, { "content-type": "application/json" })
            response.end(
              JSON.stringify({
                token: "tok-handoff",
                expires_at: new Date(Date.now() + 60_000).toISOString(),
                consumer: "ops",
                actions: ["storage-reconcile-read", "storage-reconcile-apply"],
                hosts: ["forge-1"],
                items: []
              })
            )
            return
          }
          seen.push({
            method: request.method ?? "",
            url: request.url ?? "",
            authorization: request.headers.authorization
          })
          response.writeHead(answer.status, { "content-type": answer.type })
          response.end(answer.body)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server }))
      )
    }),
    ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )

const grantFile = () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-client-")), "ops.grant")
  fs.writeFileSync(file, JSON.stringify({ grant_id: "grant_x", consumer: "ops", secret: "s3cret" }), { mode: 0o600 })
  return file
}

const reconcile = (url: string, phase: string) =>
  runCli(["host", "storage-root-reconcile", "forge-1", "--transaction", "t-1", "--phase", phase, "--json"], {
    KEEL_CONTROL_PLANE_URL: url,
    KEEL_GRANT_FILE: grantFile(),
    KEEL_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-client-")), "data")
  })

describe("ctl host storage-root-reconcile, through the typed client", () => {
  it.scoped("the answer as sent, its exit_code; GET for status, POST for a phase, the query and the token", () =>
    Effect.gen(function* () {
      const answer = { exit_code: 2, refusal: "unknown_transaction", report: null }
      const served = yield* standIn({ status: 200, type: "application/json", body: JSON.stringify(answer) })
      const status = yield* reconcile(served.url, "status")
      assert.strictEqual(status.exitCode, 2, status.stderr)
      assert.strictEqual(status.stdout, JSON.stringify(answer, null, 2))
      const run = yield* reconcile(served.url, "run")
      assert.strictEqual(run.exitCode, 2, run.stderr)
      assert.deepStrictEqual(served.seen, [
        {
          method: "GET",
          url: "/api/host/storage-root-reconcile?target=forge-1&transaction=t-1&phase=status",
          authorization: "Bearer tok-handoff"
        },
        {
          method: "POST",
          url: "/api/host/storage-root-reconcile?target=forge-1&transaction=t-1&phase=run",
          authorization: "Bearer tok-handoff"
        }
      ])
    })
  )

  it.scoped("a refusal is the control plane's code, else its HTTP status; an answer without JSON says so", () =>
    Effect.gen(function* () {
      const coded = yield* standIn({
        status: 401,
        type: "application/problem+json",
        body: JSON.stringify({ code: "STORAGE_RECONCILE_UNAUTHORIZED", detail: "no grant for forge-1" })
      })
      const refused = yield* reconcile(coded.url, "run")
      assert.strictEqual(refused.exitCode, 1)
      assert.deepStrictEqual(JSON.parse(refused.stdout), {
        error: {
          code: "STORAGE_RECONCILE_UNAUTHORIZED",
          detail: "STORAGE_RECONCILE_UNAUTHORIZED: no grant for forge-1"
        }
      })

      const uncoded = yield* standIn({ status: 503, type: "application/json", body: '{"detail":"overloaded"}' })
      const unnamed = yield* reconcile(uncoded.url, "status")
      assert.strictEqual(unnamed.exitCode, 1)
      assert.deepStrictEqual(JSON.parse(unnamed.stdout), {
        error: { code: "HTTP_503", detail: "HTTP_503: overloaded" }
      })

      const proxy = yield* standIn({ status: 502, type: "text/html", body: "<html>Bad Gateway</html>" })
      const page = yield* reconcile(proxy.url, "status")
      assert.strictEqual(page.exitCode, 1)
      assert.strictEqual(JSON.parse(page.stdout).error.detail, "the control plane answered 502 without JSON")
    })
  )
})
