import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { HttpTest } from "../support/http.js"

const freshDataDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-cli-gt-")), "data")

describe("ctl gt ingest without a registry it can read", () => {
  it.effect(
    "no registry configured: exit 1 saying how to configure one (REGISTRY_NOT_CONFIGURED), never an empty success",
    () =>
      Effect.gen(function* () {
        const env = { KEEL_DATA_DIR: freshDataDir() }
        const human = yield* runCli(["gt", "ingest"], env)
        assert.strictEqual(human.exitCode, 1, human.stdout)
        assert.strictEqual(human.stdout, "")
        assert.include(human.stderr, "no source registry is configured")
        assert.include(human.stderr, "GT_REGISTRY_REPO")
        const machine = yield* runCli(["gt", "ingest", "--json"], env)
        assert.strictEqual(machine.exitCode, 1)
        const answer = JSON.parse(machine.stdout)
        assert.strictEqual(answer.error.code, "REGISTRY_NOT_CONFIGURED")
        assert.include(answer.error.detail, "GT_REGISTRY_REPO")
        // Naming a source changes nothing: there is no registry to find it in.
        const named = yield* runCli(["gt", "ingest", "docs", "--json"], env)
        assert.strictEqual(named.exitCode, 1)
        assert.strictEqual(JSON.parse(named.stdout).error.code, "REGISTRY_NOT_CONFIGURED")
      }),
    60_000
  )

  it.effect(
    "a registry git cannot fetch: exit 1 with git's own reason (ctl has no server log), credentials never shown",
    () =>
      Effect.gen(function* () {
        const missing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-cli-gt-reg-")), "nowhere")
        const local = yield* runCli(["gt", "ingest", "--json"], {
          KEEL_DATA_DIR: freshDataDir(),
          GT_REGISTRY_REPO: missing
        })
        assert.strictEqual(local.exitCode, 1)
        const error = JSON.parse(local.stdout).error
        assert.strictEqual(error.code, "REGISTRY_UNAVAILABLE")
        assert.notInclude(error.detail, "server log")
        assert.include(error.detail, missing)
        assert.include(error.detail, "does not exist")
        // A registry behind a URL with credentials (nothing listens on port 1 of the loopback).
        const remote = yield* runCli(["gt", "ingest"], {
          KEEL_DATA_DIR: freshDataDir(),
          GT_REGISTRY_REPO: "http://bob:s3cr3tTOKEN@127.0.0.1:1/docs.git"
        })
        assert.strictEqual(remote.exitCode, 1)
        assert.include(remote.stderr, "could not be fetched")
        assert.notInclude(remote.stderr, "server log")
        assert.notInclude(`${remote.stdout}${remote.stderr}`, "s3cr3tTOKEN")
      }),
    60_000
  )
})

layer(HttpTest({ settings: { dataDir: freshDataDir() } }), { timeout: "60 seconds", excludeTestServices: true })(
  "POST /ingest/repo without a registry",
  (it) => {
    it.effect("no registry configured is 503 REGISTRY_NOT_CONFIGURED, saying which setting, naming no path", () =>
      Effect.gen(function* () {
        const client = yield* HttpClient.HttpClient
        const response = yield* client.execute(
          HttpClientRequest.bodyText(HttpClientRequest.post("/ingest/repo"), "{}", "application/json")
        )
        const body = (yield* response.json) as { code: string; detail: string }
        assert.strictEqual(response.status, 503)
        assert.strictEqual(body.code, "REGISTRY_NOT_CONFIGURED")
        assert.include(body.detail, "GT_REGISTRY_REPO")
        assert.notInclude(body.detail, os.tmpdir())
      }).pipe(Effect.scoped)
    )
  }
)
