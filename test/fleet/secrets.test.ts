import { execFileSync, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import {
  AppConfigTest,
  childEnv,
  FleetRegistry,
  MemoryObjectStoreLayer,
  ObjectGateway,
  selfEnv,
  splitCredentials
} from "../support/keel.js"
import { runCtl, runCtlOk } from "../support/server.js"

const root = fileURLToPath(new URL("../..", import.meta.url))
const temp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

describe("a child process never inherits Keel's secrets", () => {
  it("the environment is built: an allow-list plus what the caller sets, never a KEEL_* or named secret", () => {
    const parent = {
      PATH: "/usr/bin",
      HOME: "/home/op",
      LC_ALL: "C.UTF-8",
      KEEL_VAULT_KEY: "master",
      KEEL_DATA_DIR: "/var/lib/keel",
      GT_TOKENS: "t",
      AWS_SECRET_ACCESS_KEY: "aws",
      KEEL_SECRET_ENV: "MY_TOKEN"
    }
    assert.deepStrictEqual(childEnv({ GIT_TERMINAL_PROMPT: "0", KEEL_VAULT_KEY: "x", MY_TOKEN: "y" }, parent), {
      PATH: "/usr/bin",
      HOME: "/home/op",
      LC_ALL: "C.UTF-8",
      GIT_TERMINAL_PROMPT: "0"
    })
  })

  it("Keel's own detached worker keeps Keel's settings, never its secrets", () => {
    const parent = {
      PATH: "/usr/bin",
      KEEL_VAULT_KEY: "master",
      KEEL_ADMIN_TOKENS: "admin",
      KEEL_DATA_DIR: "/var/lib/keel",
      KEEL_HANDOFF_GRANT_FILE: "/etc/keel/handoff.grant",
      KEEL_SECRET_ENV: "KEEL_MY_TOKEN",
      KEEL_MY_TOKEN: "mine",
      GT_TOKENS: "t",
      AWS_SECRET_ACCESS_KEY: "aws"
    }
    assert.deepStrictEqual(selfEnv(parent), {
      PATH: "/usr/bin",
      KEEL_DATA_DIR: "/var/lib/keel",
      KEEL_HANDOFF_GRANT_FILE: "/etc/keel/handoff.grant",
      KEEL_SECRET_ENV: "KEEL_MY_TOKEN"
    })
  })

  it("`env` through `ctl host exec` and through a queued job shows no KEEL_* secret", async () => {
    const dir = temp("keel-secrets-")
    const secrets = {
      KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
      KEEL_ADMIN_TOKENS: `admin-${randomBytes(8).toString("hex")}`,
      GT_TOKENS: `gt-${randomBytes(8).toString("hex")}`
    }
    const env = {
      ...process.env,
      ...secrets,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const run = (args: Array<string>) => runCtlOk(args, env)
    const leaks = (text: string) =>
      [...Object.values(secrets), "KEEL_"].filter((needle) => text.includes(needle)).map((n) => n.slice(0, 5))

    const exec = await run(["host", "exec", "forge-1", "--", "env"])
    assert.include(exec, "PATH=")
    assert.deepStrictEqual(leaks(exec), [])

    const id = JSON.parse(await run(["machine", "submit", "forge-1", "--json", "--", "env"])).id as string
    await run(["machine", "work", "--until-empty"])
    const logs = JSON.parse(await run(["machine", "logs", id, "--json"])) as { lines: Array<{ line: string }> }
    const text = logs.lines.map((l) => l.line).join("\n")
    assert.include(text, "PATH=")
    assert.deepStrictEqual(leaks(text), [])
  }, 300_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})

describe("a queued job cannot read its worker's secrets (issue 42)", () => {
  // The job is a real process that tries: /proc/<pid>/environ and /proc/<pid>/cmdline of its parent and of every
  // ancestor up to init. The worker got the secrets in its environment, as an operator's unit would give them.
  const script = [
    "p=$PPID",
    'while [ "$p" -gt 1 ]; do',
    '  if tr "\\000" "\\n" < /proc/$p/environ; then echo "environ-read $p"; else echo "environ-refused $p"; fi',
    '  if tr "\\000" " " < /proc/$p/cmdline; then echo; echo "cmdline-read $p"; fi',
    "  p=$(sed 's/.*) [A-Za-z] \\([0-9]*\\).*/\\1/' /proc/$p/stat)",
    "done",
    'echo "ancestors-walked"'
  ].join("\n")

  it("/proc/$PPID/environ and every ancestor's environ and cmdline show no secret", async () => {
    const dir = temp("keel-job-environ-")
    const secrets = {
      KEEL_VAULT_KEY: randomBytes(32).toString("base64"),
      KEEL_ADMIN_TOKENS: `admin-${randomBytes(8).toString("hex")}`,
      GT_TOKENS: `gt-${randomBytes(8).toString("hex")}`,
      GT_LLM_API_KEY: `llm-${randomBytes(8).toString("hex")}`,
      KEEL_SECRET_ENV: "OPERATOR_TOKEN",
      OPERATOR_TOKEN: `op-${randomBytes(8).toString("hex")}`
    }
    const env = {
      ...process.env,
      ...secrets,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning"
    }
    const run = (args: Array<string>) => runCtlOk(args, env)
    const id = JSON.parse(await run(["machine", "submit", "forge-1", "--json", "--", "sh", "-c", script])).id as string
    const worked = JSON.parse(await run(["machine", "work", "--until-empty", "--json"])) as { ran: number }
    assert.strictEqual(worked.ran, 1)
    const logs = JSON.parse(await run(["machine", "logs", id, "--limit", "10000", "--json"])) as {
      lines: Array<{ line: string }>
    }
    const text = logs.lines.map((l) => l.line).join("\n")
    // It did try, and could read: the walk ended, and the worker's block was read (its non-secret settings show).
    assert.include(text, "ancestors-walked")
    assert.match(text, /^environ-read \d+$/m)
    assert.include(text, `KEEL_DATA_DIR=${env.KEEL_DATA_DIR}`)
    const leaked = Object.entries(secrets)
      .filter(([name, value]) => name !== "KEEL_SECRET_ENV" && text.includes(value))
      .map(([name]) => name)
    assert.deepStrictEqual(leaked, [])
    for (const name of Object.keys(secrets).filter((n) => n !== "KEEL_SECRET_ENV"))
      assert.notMatch(text, new RegExp(`^${name}=`, "m"), name)
  }, 300_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})

describe("with KEEL_JOB_USER, a job runs as another user (issue 42)", () => {
  // A job of the worker's own user can read what that user can (files; memory where ptrace is allowed); another
  // user cannot open the worker's /proc entries at all. A root worker switches; any other worker refuses to start.
  const probe = [
    "id -u",
    "if cat /proc/$PPID/environ > /dev/null 2>&1; then echo environ-open; else echo environ-refused; fi",
    "if ( exec 3< /proc/$PPID/mem ) 2> /dev/null; then echo mem-open; else echo mem-refused; fi",
    'echo "home=$HOME user=$USER"'
  ].join("\n")

  it("the job is nobody and cannot open its worker's environ or memory; a worker not root refuses", async () => {
    const dir = temp("keel-job-user-")
    const vaultKey = randomBytes(32).toString("base64")
    const env = {
      ...process.env,
      KEEL_VAULT_KEY: vaultKey,
      KEEL_DATA_DIR: path.join(dir, "data"),
      KEEL_REGISTRY: path.join(root, "examples", "registry.yml"),
      KEEL_DEMO_DATA: "false",
      KEEL_LOG_LEVEL: "warning",
      KEEL_JOB_USER: "nobody"
    }
    const run = (args: Array<string>) => runCtlOk(args, env)
    const nobody = execFileSync("getent", ["passwd", "nobody"], { encoding: "utf8" }).split(":")
    const id = JSON.parse(await run(["machine", "submit", "forge-1", "--json", "--", "sh", "-c", probe])).id as string
    if (process.getuid?.() !== 0) {
      // Not root: the worker cannot become nobody, says so and runs nothing.
      const worked = await runCtl(["machine", "work", "--until-empty", "--json"], env)
      const refusal = worked.code === 0 ? "" : worked.stdout
      assert.include(refusal, "WORKER_JOB_USER_REFUSED")
      assert.strictEqual(JSON.parse(await run(["machine", "status", id, "--json"])).state, "queued")
      return
    }
    assert.strictEqual(
      (JSON.parse(await run(["machine", "work", "--until-empty", "--json"])) as { ran: number }).ran,
      1
    )
    const logs = JSON.parse(await run(["machine", "logs", id, "--json"])) as { lines: Array<{ line: string }> }
    const lines = logs.lines.map((l) => l.line)
    assert.deepStrictEqual(lines, [nobody[2], "environ-refused", "mem-refused", `home=${nobody[5]} user=nobody`])
    assert.notInclude(lines.join("\n"), vaultKey)
    // A user the host does not have is refused before any job is claimed.
    const refused = await runCtl(["machine", "work", "--until-empty", "--json"], {
      ...env,
      KEEL_JOB_USER: "keel-no-such-user"
    })
    const unknown = refused.code === 0 ? "" : refused.stdout
    assert.include(unknown, "WORKER_JOB_USER_REFUSED")
  }, 300_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine
})

/** A git smart-HTTP server (git http-backend) behind basic auth, answering each request after `delayMs`. */
const gitServer = async (projectRoot: string, user: string, password: string, delayMs: number) => {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"' }).end()
      return
    }
    const url = new URL(req.url ?? "/", "http://localhost")
    setTimeout(() => {
      const cgi = spawn("git", ["http-backend"], {
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          GIT_PROJECT_ROOT: projectRoot,
          GIT_HTTP_EXPORT_ALL: "1",
          PATH_INFO: url.pathname,
          QUERY_STRING: url.search.slice(1),
          REQUEST_METHOD: req.method ?? "GET",
          CONTENT_TYPE: req.headers["content-type"] ?? "",
          HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"] ?? ""),
          REMOTE_USER: user,
          REMOTE_ADDR: "127.0.0.1"
        }
      })
      req.pipe(cgi.stdin)
      const chunks: Array<Buffer> = []
      cgi.stdout.on("data", (c: Buffer) => chunks.push(c))
      cgi.on("close", () => {
        const all = Buffer.concat(chunks)
        const split = all.indexOf("\r\n\r\n")
        const head = all.subarray(0, split).toString()
        const headers: Record<string, string> = {}
        let status = 200
        for (const line of head.split("\r\n")) {
          const colon = line.indexOf(":")
          const name = line.slice(0, colon).trim()
          const value = line.slice(colon + 1).trim()
          if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
          else headers[name] = value
        }
        res.writeHead(status, headers).end(all.subarray(split + 4))
      })
    }, delayMs)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as AddressInfo).port }
}

/** Every process's argv visible now, as /proc/<pid>/cmdline (world-readable: what `ps` shows anyone). */
const allCmdlines = () =>
  fs.readdirSync("/proc").flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return []
    try {
      return [fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")]
    } catch {
      return []
    }
  })

describe("credentials in a git URL never reach git's argv", () => {
  it("splitCredentials takes user and password out of an http(s) URL, decoded", () => {
    assert.deepStrictEqual(splitCredentials("https://ci%40corp:p%3Ass@git.example/r.git"), {
      url: "https://git.example/r.git",
      username: "ci@corp",
      password: "p:ss"
    })
    assert.deepStrictEqual(splitCredentials("ssh://git@host/r.git"), { url: "ssh://host/r.git" })
  })

  it.live(
    "a registry cloned from an authenticated server: no password in any process's cmdline, the mirror's config or errors",
    () => {
      const dir = temp("keel-gitauth-")
      const work = path.join(dir, "work")
      fs.mkdirSync(work)
      fs.copyFileSync(path.join(root, "examples", "registry.yml"), path.join(work, "registry.yml"))
      const git = (cwd: string, ...args: Array<string>) =>
        execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@localhost", "-C", cwd, ...args], {
          stdio: "ignore"
        })
      git(work, "init", "-q", "-b", "main")
      git(work, "add", "registry.yml")
      git(work, "commit", "-q", "-m", "registry")
      const projects = path.join(dir, "srv")
      fs.mkdirSync(projects)
      execFileSync("git", ["clone", "-q", "--bare", work, path.join(projects, "fleet.git")], { stdio: "ignore" })
      const password = `pw-${randomBytes(6).toString("hex")}`
      const dataDir = path.join(dir, "data")
      return Effect.gen(function* () {
        const { port, server } = yield* Effect.promise(() => gitServer(projects, "ci", password, 150))
        const seen = new Set<string>()
        let samples = 0
        const sampler = setInterval(() => {
          samples++
          for (const line of allCmdlines()) if (line.includes("git")) seen.add(line)
        }, 5)
        const layer = FleetRegistry.Default.pipe(
          Layer.provideMerge(ObjectGateway.Default),
          Layer.provideMerge(MemoryObjectStoreLayer),
          Layer.provideMerge(AppConfigTest({ dataDir })),
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", `http://ci:${password}@127.0.0.1:${port}/fleet.git`]]))
            )
          )
        )
        const snapshot = yield* Effect.flatMap(FleetRegistry, (r) => r.read()).pipe(
          Effect.provide(layer),
          Effect.ensuring(
            Effect.sync(() => {
              clearInterval(sampler)
              server.close()
            })
          )
        )
        assert.strictEqual(snapshot.source.kind, "git")
        assert.strictEqual(snapshot.source.location, `http://127.0.0.1:${port}/fleet.git`)
        assert.isAbove(samples, 10)
        // The sampler saw git at work (its clone or fetch), and never the password.
        assert.isTrue(
          [...seen].some((line) => line.includes(`127.0.0.1:${port}`)),
          "the sampler caught git talking to the server"
        )
        assert.deepStrictEqual(
          [...seen].filter((line) => line.includes(password)),
          []
        )
        const mirrors = path.join(dataDir, "registry-mirrors")
        const files = fs.readdirSync(mirrors)
        assert.deepStrictEqual(
          files.filter((f) => f.startsWith(".askpass-")),
          [],
          "the credentials directory is gone after the call"
        )
        for (const mirror of files)
          assert.notInclude(fs.readFileSync(path.join(mirrors, mirror, "config"), "utf8"), password)

        // A wrong password: the error names the URL without credentials and never the password.
        const wrong = `http://ci:not-${password}@127.0.0.1:${port}/other.git`
        const refused = yield* Effect.flip(
          Effect.flatMap(FleetRegistry, (r) => r.read()).pipe(
            Effect.provide(
              FleetRegistry.Default.pipe(
                Layer.provideMerge(ObjectGateway.Default),
                Layer.provideMerge(MemoryObjectStoreLayer),
                Layer.provideMerge(AppConfigTest({ dataDir })),
                Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_REGISTRY", wrong]]))))
              )
            )
          )
        )
        assert.notInclude(JSON.stringify(refused), password)
      })
    },
    60_000
  )
})

describe("a git registry whose server never answers", () => {
  it.live(
    "fails within KEEL_GIT_TIMEOUT as unavailable, and leaves no git process behind",
    () => {
      const dir = temp("keel-hung-")
      return Effect.gen(function* () {
        // Accepts connections and never says a word.
        const sockets: Array<import("node:net").Socket> = []
        const server = http.createServer(() => {})
        server.on("connection", (socket) => sockets.push(socket))
        yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)))
        const port = (server.address() as AddressInfo).port
        const failure = yield* Effect.flip(
          Effect.flatMap(FleetRegistry, (r) => r.read()).pipe(
            Effect.provide(
              FleetRegistry.Default.pipe(
                Layer.provideMerge(ObjectGateway.Default),
                Layer.provideMerge(MemoryObjectStoreLayer),
                Layer.provideMerge(AppConfigTest({ dataDir: path.join(dir, "data") })),
                Layer.provide(
                  Layer.setConfigProvider(
                    ConfigProvider.fromMap(
                      new Map([
                        ["KEEL_REGISTRY", `http://127.0.0.1:${port}/fleet.git`],
                        ["KEEL_GIT_TIMEOUT", "2 seconds"]
                      ])
                    )
                  )
                )
              )
            ),
            Effect.ensuring(
              Effect.sync(() => {
                for (const socket of sockets) socket.destroy()
                server.close()
              })
            )
          )
        )
        assert.strictEqual(failure._tag, "FleetRegistryUnavailable")
        // The server never answers and never closes: only the stall timeout can have ended the read (no elapsed-time
        // assert: on a loaded machine git's start alone varies; the test's own timeout bounds a hang).
        // No git left talking to the dead server.
        let left: Array<string> = []
        for (let i = 0; i < 100; i++) {
          left = allCmdlines().filter((line) => line.includes(`127.0.0.1:${port}`))
          if (left.length === 0) break
          yield* Effect.sleep(50)
        }
        assert.deepStrictEqual(left, [])
      })
    },
    60_000
  )
})
