import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { cliOnPostgres } from "./support/pg-datadir.js"
import { runCtl, startServer as startChild } from "./support/server.js"

// These tests run the built package (npm test builds first) as real processes.
const root = fileURLToPath(new URL("..", import.meta.url))
const ctlBin = path.join(root, "bin", "ctl.js")
const children: Array<ChildProcess> = []

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL")
})

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "keel-proc-"))

const startServer = (args: ReadonlyArray<string>, env: Record<string, string>) => startChild(args, env, children)

const get = (port: number, pathname: string, headers: Record<string, string> = {}) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: pathname, agent: false, headers }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => {
        body += chunk
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on("error", reject)
  })

const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null) resolve({ code: child.exitCode, signal: child.signalCode })
    else child.on("exit", (code, signal) => resolve({ code, signal }))
  })

describe("the ctl process", () => {
  it("ctl serve answers both health probes, seeds nothing twice, keeps its data dir owner-only, and exits 0 on SIGTERM", async () => {
    const dataDir = path.join(tempDir(), "data")
    const server = await startServer([ctlBin, "serve", "--port", "0"], { KEEL_DATA_DIR: dataDir })
    expect(await get(server.port, "/api/health")).toEqual({ status: 200, body: '{"status":"ok"}' })
    expect(await get(server.port, "/health")).toEqual({ status: 200, body: '{"status":"ok"}' })
    expect((await get(server.port, "/docs/marketplace/openapi.json")).status).toBe(200)
    // The database is the data dir's keel.db — or, under test:pg, a PostgreSQL schema, and no file at all.
    expect(fs.existsSync(path.join(dataDir, "keel.db"))).toBe(!cliOnPostgres)
    // Demo data: the example journey registry is in place and serves assignments.
    expect(fs.existsSync(path.join(dataDir, "product-registry.yml"))).toBe(true)
    const assigned = await get(
      server.port,
      "/api/experiments/assign?app_id=keel-demo-ios&platform=ios&surface=onboarding&subject=demo-user",
      { "x-client-key": "pk_demo_ios_4f1c9a7e2b" }
    )
    expect(assigned.status).toBe(200)
    expect(JSON.parse(assigned.body).experimentId).toBe("onboarding-headline-2026-11")
    // Demo data: Keel's own docs are ingested, and answer a loopback client (no GT_TOKENS configured).
    const search = JSON.parse((await get(server.port, "/search?q=fenced%20lease")).body)
    expect(search.hits[0].repo).toBe("keel")
    expect(search.hits[0].path).toBe("docs/leases.md")
    const blog = await get(server.port, "/api/public/blog/blog")
    expect(JSON.parse(blog.body).posts.length).toBeGreaterThan(0)
    // Marketplace demo: five agents with traded tokens, a price history, chat, and the demo credentials.
    const agents = JSON.parse((await get(server.port, "/api/agents")).body)
    // The list is oldest first, ties (agents launched in the same millisecond) by ticker (docs/marketplace.md).
    const listed: Array<[number, string]> = []
    for (const { ticker } of agents as Array<{ ticker: string }>) {
      const detail = JSON.parse((await get(server.port, `/api/agents/${ticker}`)).body)
      listed.push([Date.parse(detail.created_at), ticker])
    }
    expect([...listed].sort(([t1, a], [t2, b]) => t1 - t2 || (a < b ? -1 : a > b ? 1 : 0))).toEqual(listed)
    expect(listed.map(([, ticker]) => ticker).sort()).toEqual(["FORGE", "LEDGR", "MUSE", "SAGE", "SCOUT"])
    const tokens = JSON.parse((await get(server.port, "/api/tokens")).body)
    expect(tokens.every((t: { volume_24h: number }) => t.volume_24h > 0)).toBe(true)
    expect(JSON.parse((await get(server.port, "/api/coin/history?period=30d")).body).history.length).toBeGreaterThan(50)
    expect(JSON.parse((await get(server.port, "/api/chat")).body).length).toBeGreaterThan(5)
    // Fleet demo: the example registry is the data dir's registry, and its first load was kept.
    expect(fs.existsSync(path.join(dataDir, "fleet-registry.yml"))).toBe(true)
    expect(fs.existsSync(path.join(dataDir, "objects", "state", "registry", "last-valid.json"))).toBe(true)
    const credentialsFile = path.join(dataDir, "demo-market.json")
    expect(fs.statSync(credentialsFile).mode & 0o777).toBe(0o600)
    // Owner-only (issue 42): the data dir 0700; the database, its -wal and -shm 0600; what the server writes
    // without a stated mode (an object, a mirror) 0600 too, under its umask 077.
    const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)
    expect(modeOf(dataDir)).toBe("700")
    const databaseFiles = cliOnPostgres ? [] : ["keel.db", "keel.db-wal", "keel.db-shm"]
    for (const name of databaseFiles) expect(modeOf(path.join(dataDir, name))).toBe("600")
    expect(modeOf(path.join(dataDir, "objects", "state", "registry", "last-valid.json"))).toBe("600")
    const demo = JSON.parse(fs.readFileSync(credentialsFile, "utf8"))
    const balance = await get(server.port, `/api/coin/balance?user_id=${demo.wallet.address}`, {
      authorization: `Bearer ${demo.wallet.api_key}`
    })
    expect(balance.status).toBe(200)
    expect(JSON.parse(balance.body).balance).toBeGreaterThan(9_000)
    server.child.kill("SIGTERM")
    expect(await exitOf(server.child)).toEqual({ code: 0, signal: null })
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("a client that resets an upgrade request's connection mid-answer takes nothing down", async () => {
    const server = await startServer([ctlBin, "serve", "--port", "0"], { KEEL_DATA_DIR: path.join(tempDir(), "data") })
    // Keel has no WebSocket route: an upgrade request is answered like any other, over a socket Node hands
    // over without its own error listener. Resetting it while the answer is written ended the process.
    for (const pathname of ["/docs/marketplace", "/api/stream", "/docs/marketplace"]) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(server.port, "127.0.0.1", () =>
          socket.write(`GET ${pathname} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`)
        )
        socket.once("data", () => {
          socket.resetAndDestroy()
          resolve()
        })
        socket.on("error", () => resolve())
        setTimeout(resolve, 5_000).unref()
      })
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(server.child.exitCode).toBeNull()
    expect((await get(server.port, "/api/health")).status).toBe(200)
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("ctl serve on a port already taken exits 1 and says which address is in use", async () => {
    const taken = http.createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    const port = (taken.address() as { port: number }).port
    try {
      const child = spawn(process.execPath, [ctlBin, "serve", "--port", String(port)], {
        env: { PATH: process.env.PATH ?? "", KEEL_DATA_DIR: path.join(tempDir(), "data"), KEEL_DEMO_DATA: "false" },
        stdio: ["ignore", "pipe", "pipe"]
      })
      children.push(child)
      let stderr = ""
      child.stderr?.setEncoding("utf8").on("data", (chunk) => {
        stderr += chunk
      })
      expect(await exitOf(child)).toEqual({ code: 1, signal: null })
      expect(stderr).toContain("EADDRINUSE")
      expect(stderr).toContain(`127.0.0.1:${port}`)
      expect(stderr).not.toMatch(/ctl: \s*$/)
    } finally {
      taken.close()
    }
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("SIGTERM with an event stream open: the stream ends cleanly and the process exits 0", async () => {
    const server = await startServer([ctlBin, "serve", "--port", "0"], {
      KEEL_DATA_DIR: path.join(tempDir(), "data"),
      KEEL_DEMO_DATA: "false",
      // Longer than this test's timeout: only ending the stream lets the process exit in time.
      KEEL_SHUTDOWN_GRACE: "2 minutes"
    })
    const stream = new Promise<{ status: number; text: string; ended: boolean }>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port: server.port, path: "/api/stream", agent: false }, (res) => {
          let text = ""
          res.setEncoding("utf8")
          res.on("data", (chunk) => {
            text += chunk
            if (text.includes("retry:")) server.child.kill("SIGTERM")
          })
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text, ended: true }))
          res.on("error", reject)
        })
        .on("error", reject)
    })
    const ended = await stream
    expect(ended.status).toBe(200)
    expect(ended.text.startsWith("retry: 3000")).toBe(true)
    expect(await exitOf(server.child)).toEqual({ code: 0, signal: null })
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("ctl serve --surface groundtruth serves only that surface", async () => {
    const server = await startServer([ctlBin, "serve", "--surface", "groundtruth", "--port", "0"], {
      KEEL_DATA_DIR: path.join(tempDir(), "data")
    })
    expect((await get(server.port, "/health")).status).toBe(200)
    const product = await get(server.port, "/api/health")
    expect(product.status).toBe(404)
    expect(JSON.parse(product.body).code).toBe("NOT_FOUND")
    server.child.kill("SIGTERM")
    expect((await exitOf(server.child)).code).toBe(0)
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("SIGTERM during a slow request: the request completes, then the process exits 0", async () => {
    const server = await startServer([path.join(root, "test", "fixtures", "slow-server.mjs")], {
      KEEL_DATA_DIR: path.join(tempDir(), "data"),
      SLOW_MILLIS: "1500"
    })
    const slow = get(server.port, "/slow")
    await new Promise<void>((resolve) => {
      const check = () => (server.logs().includes("slow request started") ? resolve() : setTimeout(check, 20))
      check()
    })
    server.child.kill("SIGTERM")
    expect(await slow).toEqual({ status: 200, body: "done" })
    expect(await exitOf(server.child)).toEqual({ code: 0, signal: null })
    expect(server.logs()).not.toMatch(/"level":"ERROR"|"logLevel":"ERROR"/)
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine

  it("ctl with no arguments at all or a bad flag exits 2; --version prints the version", async () => {
    const run = (args: ReadonlyArray<string>) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [ctlBin, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] })
        let stdout = ""
        child.stdout.on("data", (chunk) => {
          stdout += chunk
        })
        child.on("exit", (code) => resolve({ code, stdout }))
      })
    const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version
    const shown = await run(["--version"])
    expect(shown.code).toBe(0)
    expect(shown.stdout.trim()).toBe(version)
    expect((await run(["serve", "--port", "not-a-port"])).code).toBe(2)
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine
})

describe("the package entry", () => {
  it("disk-cleanup --print-units --settings-file PATH reaches ctl (Node 20 takes --env-file for itself)", async () => {
    const settings = path.join(tempDir(), "cleanup.env")
    const run = await runCtl(["disk-cleanup", "--print-units", "--settings-file", settings], {
      PATH: process.env.PATH ?? "",
      KEEL_DATA_DIR: path.join(tempDir(), "data")
    })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`EnvironmentFile=${settings}`)
    // A --ctl with a line break would write another directive into the unit: refused, nothing printed.
    const injected = await runCtl(["disk-cleanup", "--print-units", "--ctl", "ctl\nExecStartPre=/bin/evil"], {
      PATH: process.env.PATH ?? "",
      KEEL_DATA_DIR: path.join(tempDir(), "data")
    })
    expect(injected.code).toBe(1)
    expect(injected.stdout).not.toContain("ExecStartPre")
    expect(injected.stderr).toContain("must be one line")
  }, 120_000) // a bound on a hang: each ctl call takes 10–20 s on a loaded machine

  it('import("keel") exports the library and starts nothing, opens nothing, listens on nothing', async () => {
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(root, "test", "fixtures", "import-probe.mjs")], {
        cwd: root,
        env: { ...process.env, KEEL_DATA_DIR: path.join(tempDir(), "never-created") },
        stdio: ["ignore", "pipe", "inherit"]
      })
      let stdout = ""
      child.stdout.on("data", (chunk) => {
        stdout += chunk
      })
      child.on("exit", (code) => resolve({ code, stdout }))
    })
    // The process ends by itself: nothing the import did keeps the event loop alive.
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout) as {
      exports: Array<string>
      touched: Array<string>
      handles: Array<string>
    }
    // msgpackr's native-addon loader (a dependency of @effect/cluster) probes the C library through
    // /proc/self/exe when loaded; Keel itself opens, creates and writes nothing.
    expect(report.touched.filter((entry) => entry !== "openSync:/proc/self/exe")).toEqual([])
    expect(report.handles).toEqual([])
    for (const name of [
      "Layers.AppLive",
      "Layers.AppTest",
      "Layers.httpServer",
      "GroundTruth.GroundTruthApi",
      "Product.ProductApi",
      "Clients.productClient",
      "Platform.Leases",
      "Cli.ctl"
    ]) {
      expect(report.exports).toContain(name)
    }
  }, 180_000) // a bound on a hang: a server or ctl start takes 10–20 s on a loaded machine
})
