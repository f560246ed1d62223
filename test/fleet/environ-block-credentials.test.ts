import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { dataDirMigrated } from "../support/data-dir-db.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const ctl = path.join(root, "bin", "ctl.js")

/** Polls `condition` every 100 ms until it holds (a bound on a hang, not a timing claim). */
const waitFor = async (what: string, condition: () => boolean | Promise<boolean>, limitMs = 120_000) => {
  const deadline = Date.now() + limitMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const environOf = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
  } catch {
    return undefined
  }
}

describe.skipIf(!fs.existsSync("/proc/self/environ"))(
  "a worker's environment block and credentials in settings",
  () => {
    // A setting whose name is no secret can still hold one: KEEL_REGISTRY with a token in its URL (docs/beacon.md
    // says it may), a webhook URL whose path is its secret, the embeddings API key. A job reads its worker's block.
    it("/proc/<worker>/environ shows no credential of KEEL_REGISTRY, KEEL_ALERT_WEBHOOK_URL or GT_EMBEDDINGS_API_KEY", async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-environ-cred-"))
      const password = `pw-${randomBytes(8).toString("hex")}`
      const hook = `hook-${randomBytes(8).toString("hex")}`
      const embeddings = `emb-${randomBytes(8).toString("hex")}`
      const vaultKey = randomBytes(32).toString("base64")
      const dataDir = path.join(dir, "data")
      const child = spawn(process.execPath, [ctl, "machine", "work"], {
        cwd: root,
        env: {
          ...process.env,
          KEEL_VAULT_KEY: vaultKey,
          KEEL_DATA_DIR: dataDir,
          // Port 9 (discard) on loopback: nothing answers, the worker keeps polling with no targets.
          KEEL_REGISTRY: `http://ci:${password}@127.0.0.1:9/fleet.git`,
          KEEL_GIT_TIMEOUT: "2 seconds",
          KEEL_ALERT_WEBHOOK_URL: `https://hooks.example/services/T0/B0/${hook}`,
          GT_EMBEDDINGS_API_KEY: embeddings,
          KEEL_DEMO_DATA: "false",
          KEEL_LOG_LEVEL: "error"
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        output += c
      })
      child.stderr.setEncoding("utf8").on("data", (c: string) => {
        output += c
      })
      const exited = new Promise<void>((resolve) => child.on("close", () => resolve()))
      try {
        const pid = child.pid ?? 0
        // The scrub runs before any layer is built: once the database is migrated, the block is what jobs will see.
        await waitFor("the worker to open its database", () => {
          if (child.exitCode !== null) throw new Error(`the worker exited ${child.exitCode}: ${output}`)
          return dataDirMigrated(dataDir)
        })
        const block = environOf(pid)
        assert.isDefined(block, output)
        const text = (block ?? []).join("\n")
        assert.include(text, `KEEL_DATA_DIR=${dataDir}`, "the block was read")
        assert.notInclude(text, vaultKey)
        assert.notInclude(text, password, "KEEL_REGISTRY's password")
        assert.notInclude(text, hook, "the webhook's secret path")
        assert.notInclude(text, embeddings, "GT_EMBEDDINGS_API_KEY")
      } finally {
        child.kill("SIGTERM")
        await exited
      }
    }, 180_000)
  }
)
