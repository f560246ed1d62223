import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { sendJson, vaultToken } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { root } from "../support/server.js"

// Issue 42, item 5: the control plane's authorization fetched a git registry on every request, refused ones
// included; with the git server hanging, each request waited for it. Authorization now reads a snapshot held in
// memory and refreshed in the background (KEEL_REGISTRY_REFRESH): a change pushed to the repository is in force
// within the interval, and no request waits on git — here, on a git server that never answers again. The routes'
// own reads of the registry (fleet hosts, gates, overview, services, a probe's steps) answer from the same snapshot.

const work = fs.mkdtempSync(path.join(os.tmpdir(), "keel-registry-cache-"))
const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "pipe" })
const source = path.join(work, "source")
fs.mkdirSync(source)
git(source, "init", "-q", "-b", "main")
fs.copyFileSync(path.join(root, "examples", "registry.yml"), path.join(source, "registry.yml"))
git(source, "add", "registry.yml")
git(source, "commit", "-q", "-m", "registry")
const projects = path.join(work, "projects")
fs.mkdirSync(projects)
git(work, "clone", "-q", "--bare", source, path.join(projects, "registry.git"))

/** The registry's git server (git http-backend); once `hang` is set, it holds every request without answering. */
const gitServer = { hang: false, held: 0 }
const held: Array<http.ServerResponse> = []
const server = http.createServer((req, res) => {
  if (gitServer.hang) {
    gitServer.held++
    held.push(res)
    return
  }
  const url = new URL(req.url ?? "/", "http://127.0.0.1")
  const cgi = spawn("git", ["http-backend"], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: projects,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? "GET",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"] ?? ""),
      REMOTE_ADDR: "127.0.0.1"
    }
  })
  req.pipe(cgi.stdin)
  const chunks: Array<Buffer> = []
  cgi.stdout.on("data", (c: Buffer) => chunks.push(c))
  cgi.on("close", () => {
    const all = Buffer.concat(chunks)
    const split = all.indexOf("\r\n\r\n")
    const headers: Record<string, string> = {}
    let status = 200
    for (const line of all.subarray(0, split).toString().split("\r\n")) {
      const colon = line.indexOf(":")
      const name = line.slice(0, colon).trim()
      const value = line.slice(colon + 1).trim()
      if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
      else headers[name] = value
    }
    res.writeHead(status, headers).end(all.subarray(split + 4))
  })
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const registryUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/registry.git`

afterAll(() => {
  for (const res of held) res.destroy()
  server.closeAllConnections()
  server.close()
})

layer(
  HttpTest({
    surfaces: ["controlplane", "vault"],
    env: {
      KEEL_REGISTRY: registryUrl,
      KEEL_REGISTRY_REFRESH: "200 millis",
      // A request that waited on git would wait this long: far past the test's own timeout.
      KEEL_GIT_TIMEOUT: "1 hour"
    }
  }),
  { timeout: "120 seconds", excludeTestServices: true }
)("authorization reads a snapshot of a git registry, refreshed in the background", (it) => {
  it.effect(
    "a pushed change is in force within the refresh; with git hanging, every request still answers",
    () =>
      Effect.gen(function* () {
        const ops = yield* vaultToken("ops", ["object-read"])
        const dashboard = yield* vaultToken("dashboard", ["object-read"])
        const list = (token: string | undefined) => sendJson("GET", "/api/objects?prefix=state/none/", token)
        /** Asks until the answer has `status` (the background read decides when). */
        const until = (token: string, status: number) =>
          Effect.gen(function* () {
            for (;;) {
              const answer = yield* list(token)
              if (answer.status === status) return answer
              yield* Effect.sleep("100 millis")
            }
          })

        // The first read completes in the background.
        yield* until(ops, 200)

        // A change pushed to the repository (ops loses object-read) is in force after a refresh.
        const file = path.join(source, "registry.yml")
        fs.writeFileSync(
          file,
          fs.readFileSync(file, "utf8").replace("object-read: [ops, dashboard, autonomy]", "object-read: [dashboard]")
        )
        git(source, "commit", "-q", "-am", "ops loses object-read")
        git(source, "push", "-q", path.join(projects, "registry.git"), "main")
        const revoked = yield* until(ops, 403)
        assert.strictEqual(revoked.body.code, "ACTION_NOT_HELD")

        // The git server stops answering: each request answers from the snapshot, refused ones included.
        gitServer.hang = true
        for (let i = 0; i < 5; i++) {
          const allowed = yield* list(dashboard)
          assert.strictEqual(allowed.status, 200)
          const refused = yield* list(ops)
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "ACTION_NOT_HELD")
          assert.strictEqual((yield* list(undefined)).status, 401)
        }
        // Git was being asked meanwhile (the background read), and hangs there, not in a request.
        while (gitServer.held === 0) yield* Effect.sleep("100 millis")
        assert.strictEqual((yield* list(dashboard)).status, 200)

        // The routes' own registry reads answer from the same snapshot: with git hanging, each still answers.
        const reader = yield* vaultToken("dashboard", ["fleet-read"])
        const prober = yield* vaultToken("ops", ["fleet-read"], ["forge-1"])
        for (const [route, token] of [
          ["/api/fleet/hosts", reader],
          ["/api/fleet/gates/forge-1", prober],
          ["/api/fleet/overview", reader],
          ["/api/fleet/services", reader]
        ] as const) {
          const answer = yield* sendJson("GET", route, token)
          assert.strictEqual(answer.status, 200, `${route}: ${JSON.stringify(answer.body)}`)
        }
        // A probe starts, and its steps (which read the registry in the workflow) run to the end.
        const started = yield* sendJson("POST", "/api/workflows/fleet-probe", prober, { host: "forge-1" })
        assert.strictEqual(started.status, 202)
        for (;;) {
          const status = yield* sendJson("GET", `/api/workflows/fleet-probe/${started.body.execution_id}`, prober)
          assert.strictEqual(status.status, 200)
          if (status.body.state !== "running") {
            assert.strictEqual(status.body.state, "succeeded", JSON.stringify(status.body))
            break
          }
          yield* Effect.sleep("100 millis")
        }
      }),
    120_000
  )
})
