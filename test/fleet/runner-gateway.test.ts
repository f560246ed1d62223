import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { commandAllowed, makeNonceBook, SIGNATURE_HEADERS, signGatewayRequest, verifyRequest } from "../support/keel.js"
import { ctlBin, runCtlOk, startServer } from "../support/server.js"

// Issue 20, the gateway (rule 3's one loopback exception, rule 6's signing secret): pre-check jobs sign each request
// with an HMAC over agent, method, path, timestamp, nonce and body digest (±300 s, each nonce once); the gateway
// forwards only the commands the registry lists to the control plane's jobs API, with its own vault token.

const SECRET = "0123456789abcdef0123456789abcdef"
const AGENT = "gw-host/gw-host"

const sign = (
  method: string,
  target: string,
  body: string,
  options: { timestamp?: number; nonce?: string; secret?: string } = {}
) => {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000)
  const nonce = options.nonce ?? randomBytes(16).toString("hex")
  return {
    [SIGNATURE_HEADERS.agent]: AGENT,
    [SIGNATURE_HEADERS.timestamp]: String(timestamp),
    [SIGNATURE_HEADERS.nonce]: nonce,
    [SIGNATURE_HEADERS.signature]: signGatewayRequest(options.secret ?? SECRET, {
      agent: AGENT,
      method,
      path: target,
      timestamp,
      nonce,
      body: new TextEncoder().encode(body)
    })
  }
}

describe("the gateway's request signatures", () => {
  const request = { method: "POST", path: "/v1/jobs", body: new TextEncoder().encode('{"a":1}') }
  const now = Math.floor(Date.now() / 1000)

  it("accept a signed request once, and refuse it replayed, tampered, stale or unsigned", () => {
    const nonces = makeNonceBook()
    const headers = sign("POST", "/v1/jobs", '{"a":1}', { timestamp: now, nonce: "n".repeat(20) })
    assert.deepStrictEqual(verifyRequest(SECRET, AGENT, headers, request, now, nonces), { ok: true })
    assert.include(verifyRequest(SECRET, AGENT, headers, request, now, nonces), { code: "GATEWAY_REPLAY" })
    const fresh = makeNonceBook()
    const tampered = { ...request, body: new TextEncoder().encode('{"a":2}') }
    assert.include(verifyRequest(SECRET, AGENT, headers, tampered, now, fresh), { code: "GATEWAY_SIGNATURE_INVALID" })
    assert.include(verifyRequest(SECRET, AGENT, headers, { ...request, path: "/v1/jobs?x=1" }, now, fresh), {
      code: "GATEWAY_SIGNATURE_INVALID"
    })
    assert.include(verifyRequest("another secret", AGENT, headers, request, now, fresh), {
      code: "GATEWAY_SIGNATURE_INVALID"
    })
    assert.include(verifyRequest(SECRET, AGENT, headers, request, now + 301, fresh), { code: "GATEWAY_STALE" })
    assert.include(verifyRequest(SECRET, AGENT, {}, request, now, fresh), { code: "GATEWAY_UNSIGNED" })
    // A refused request spends no nonce: the genuine one still passes.
    assert.deepStrictEqual(verifyRequest(SECRET, AGENT, headers, request, now + 300, fresh), { ok: true })
  })

  it("let through only commands that start with one the registry lists, on its target", () => {
    const allowed = [{ target: "ci-1", argv: ["/usr/local/bin/precheck", "run"] }]
    assert.isTrue(commandAllowed(allowed, "ci-1", ["/usr/local/bin/precheck", "run", "--sha", "abc"]))
    assert.isFalse(commandAllowed(allowed, "ci-1", ["/usr/local/bin/precheck"]))
    assert.isFalse(commandAllowed(allowed, "ci-2", ["/usr/local/bin/precheck", "run"]))
    assert.isFalse(commandAllowed(allowed, "ci-1", ["sh", "-c", "/usr/local/bin/precheck run"]))
  })
})

/** The fields the tests read from the gateway's answers (a job, a job with its output, or a problem). */
interface GatewayAnswer {
  readonly id: string
  readonly kind: string
  readonly target: string
  readonly state: string
  readonly argv: ReadonlyArray<string>
  readonly job: { readonly state: string }
  readonly output: { readonly lines: ReadonlyArray<unknown> }
  readonly status: number
  readonly code: string
}

describe("ctl host gateway in front of a control plane", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-gateway-"))
  const children: Array<ChildProcess> = []
  const registry = path.join(dir, "registry.json")
  const env = {
    KEEL_DATA_DIR: path.join(dir, "control"),
    KEEL_REGISTRY: registry,
    KEEL_DEMO_DATA: "false"
  }
  const ctl = (args: Array<string>) => runCtlOk(args, { ...process.env, ...env })
  let gateway = ""

  beforeAll(async () => {
    const runnerRoot = path.join(dir, "runner")
    fs.mkdirSync(runnerRoot)
    fs.writeFileSync(path.join(runnerRoot, "request-signing.key"), SECRET, { mode: 0o600 })
    const runner = {
      url: "https://github.com/acme",
      runner_group: "precheck",
      runner_root: runnerRoot,
      archive: {
        version: "2.321.0",
        os: "linux",
        arch: "x64",
        sha256: "a".repeat(64),
        url: "https://example.com/r.tgz"
      },
      credential: "github#token",
      signing_secret: "runner#signing_key",
      repositories: ["acme/app"],
      gateway_jobs: [
        { target: "gw-host", argv: ["echo", "precheck"] },
        { target: "other", argv: ["echo", "precheck"] }
      ]
    }
    fs.writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        actions: { "job-submit": ["gateway-gw"] },
        targets: [
          { name: "gw-host", os: "linux", channel: "local", precheck_runner: runner },
          { name: "other", os: "linux", channel: "local" }
        ]
      })
    )
    const server = await startServer([ctlBin, "serve", "--port", "0"], env, children)
    const url = `http://127.0.0.1:${server.port}`
    // The gateway's grant: job-submit, for its own host only.
    await ctl([
      "vault",
      "grant",
      "create",
      "--consumer",
      "gateway-gw",
      "--action",
      "job-submit",
      "--host",
      "gw-host",
      "--out",
      path.join(dir, "gateway.grant")
    ])
    const started = await startServer(
      [ctlBin, "host", "gateway", "--target", "gw-host", "--port", "0"],
      {
        ...env,
        KEEL_DATA_DIR: path.join(dir, "host"),
        KEEL_CONTROL_PLANE_URL: url,
        KEEL_GATEWAY_GRANT_FILE: path.join(dir, "gateway.grant")
      },
      children
    )
    gateway = `http://127.0.0.1:${started.port}`
    // A bound on a hang: two servers and a ctl call start, 10–20 s apiece on a loaded machine.
  }, 300_000)

  afterAll(() => {
    for (const child of children) child.kill("SIGTERM")
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const send = async (method: "GET" | "POST", target: string, body = "", headers: Record<string, string> = {}) => {
    const response = await fetch(`${gateway}${target}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(method === "POST" ? { body } : {})
    })
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      body: (await response.json()) as GatewayAnswer
    }
  }

  it("forwards a signed, listed command to the queue, and shows the job and its output", async () => {
    const body = JSON.stringify({ target: "gw-host", argv: ["echo", "precheck", "ok"] })
    const submitted = await send("POST", "/v1/jobs", body, sign("POST", "/v1/jobs", body))
    assert.strictEqual(submitted.status, 202, JSON.stringify(submitted.body))
    assert.include(submitted.body, { kind: "precheck", target: "gw-host", state: "queued" })
    assert.deepStrictEqual(submitted.body.argv, ["echo", "precheck", "ok"])
    // The documented fields, no more (docs/control-plane.md, "Jobs").
    assert.sameMembers(Object.keys(submitted.body), [
      "id",
      "kind",
      "target",
      "argv",
      "state",
      "attempt",
      "created_at",
      "started_at",
      "finished_at",
      "exit_code",
      "error"
    ])

    await ctl(["machine", "work", "--until-empty"])
    const target = `/v1/jobs/${submitted.body.id}?cursor=0`
    const read = await send("GET", target, "", sign("GET", target, ""))
    assert.strictEqual(read.status, 200, JSON.stringify(read.body))
    assert.strictEqual(read.body.job.state, "succeeded")
    assert.deepStrictEqual(read.body.output.lines, [{ line_no: 1, stream: "stdout", line: "precheck ok" }])
  }, 180_000) // a bound on a hang: the ctl worker takes 10–20 s to start on a loaded machine

  it("refuses what is unsigned, replayed, unlisted, outside its grant or too large — in the one error shape", async () => {
    const body = JSON.stringify({ target: "gw-host", argv: ["echo", "precheck"] })
    const unsigned = await send("POST", "/v1/jobs", body)
    assert.strictEqual(unsigned.status, 401)
    assert.strictEqual(unsigned.type, "application/problem+json")
    assert.include(unsigned.body, { status: 401, code: "GATEWAY_UNSIGNED" })

    const headers = sign("POST", "/v1/jobs", body)
    assert.strictEqual((await send("POST", "/v1/jobs", body, headers)).status, 202)
    assert.include((await send("POST", "/v1/jobs", body, headers)).body, { code: "GATEWAY_REPLAY" })

    const shell = JSON.stringify({ target: "gw-host", argv: ["sh", "-c", "echo precheck"] })
    const refused = await send("POST", "/v1/jobs", shell, sign("POST", "/v1/jobs", shell))
    assert.strictEqual(refused.status, 403)
    assert.include(refused.body, { code: "GATEWAY_COMMAND_REFUSED" })

    // Listed in the registry, but the gateway's own grant is for its host only: the control plane refuses.
    const elsewhere = JSON.stringify({ target: "other", argv: ["echo", "precheck"] })
    const outside = await send("POST", "/v1/jobs", elsewhere, sign("POST", "/v1/jobs", elsewhere))
    assert.strictEqual(outside.status, 403, JSON.stringify(outside.body))

    const large = JSON.stringify({ target: "gw-host", argv: ["echo", "x".repeat(70_000)] })
    const tooLarge = await send("POST", "/v1/jobs", large, sign("POST", "/v1/jobs", large))
    assert.strictEqual(tooLarge.status, 413)
    assert.include(tooLarge.body, { code: "PAYLOAD_TOO_LARGE" })

    const missing = "/v1/jobs/job_nope"
    assert.strictEqual((await send("GET", missing, "", sign("GET", missing, ""))).status, 404)
  }, 60_000)
})
