import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as tls from "node:tls"
import { afterAll, assert, describe, it } from "vitest"
import { shardOf } from "../../src/services/platform/ClusterStatus.js"
import { testWallet } from "../support/market.js"
import { postgresSkipReason } from "../support/pg-schema.js"
import { makeCa, runnerTlsEnv } from "../support/runner-tls.js"
import { admin, runnersFixture, waitFor } from "../support/runners.js"
import { requestChild, runCtl } from "../support/server.js"

// The runner port over mutual TLS (issue 45; docs/cluster.md, "Security of the runner port"): two `ctl serve` runners
// (the built package: `npm run build` first) on one PostgreSQL schema, each with its own certificate from a shared CA
// made with openssl. They share the shards and reach each other's actors over TLS; a plain TCP client, a TLS client
// without a certificate and one with a certificate of another CA are refused at the runner port, and the runners go on.
// Bounded: every wait has a limit.
const children: Array<ChildProcess> = []
const schemas: Array<string> = []

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  for (const schema of schemas) await admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
})

// Ten tickers: which runner holds each is the hash ring's choice over two random ports; with ten, both runners hold
// at least one but for a chance of about 1 in 500.
const TICKERS = Array.from({ length: 10 }, (_, i) => `TLS${String.fromCharCode(65 + i)}`)
const SHARDS = 30

/**
 * What a stranger at the runner port gets: resolves when the port closes the connection (within 15 s), with whether
 * a TLS handshake completed on the client's side and how many bytes of application data arrived.
 */
const knock = (open: () => net.Socket, secure: boolean) =>
  new Promise<{ readonly handshake: boolean; readonly received: number }>((resolve, reject) => {
    let handshake = false
    let received = 0
    const socket = open()
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error("the runner port kept a stranger's connection open for 15 s"))
    }, 15_000)
    socket.on(secure ? "secureConnect" : "connect", () => {
      handshake = secure
      // Bytes a runner would read as a message if it trusted the connection.
      socket.write(Buffer.from([0x93, 0x01, 0xa4, 0x50, 0x69, 0x6e, 0x67, 0xc0]))
    })
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length
    })
    socket.on("error", () => undefined)
    socket.on("close", () => {
      clearTimeout(timer)
      resolve({ handshake, received })
    })
  })

describe.skipIf(postgresSkipReason !== undefined)("ctl serve runners with TLS on the runner port", () => {
  it("two runners with certificates of a shared CA trade each other's tickers; strangers are refused", async () => {
    const pki = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-tls-pki-"))
    const ca = makeCa(pki, "keel-runners-ca")
    const certificates = [ca.issue("runner-0"), ca.issue("runner-1")]
    const intruder = makeCa(path.join(pki, "elsewhere"), "another-ca").issue("intruder")

    const { schema, ctl, runner, runnerPorts, holders } = await runnersFixture(children, schemas)
    for (const ticker of TICKERS) await ctl(["market", "agent", "create", "--ticker", ticker, "--name", ticker])
    const wallet = testWallet(4545)
    const key = (await ctl(["market", "keys", "create", "--wallet", wallet.address])).api_key as string
    await ctl(["market", "coin", "mint", "--to", wallet.address, "--amount", "1000", "--reason", "runner tls test"])

    const servers = await Promise.all(
      [0, 1].map((i) => runner(i, ["marketplace"], runnerTlsEnv(ca.cert, certificates[i]!)))
    )
    const addresses = runnerPorts.map((port) => `127.0.0.1:${port}`)
    // Each runner says which certificate it presents, and never its key.
    servers.forEach((server, i) => {
      assert.match(server.logs(), new RegExp(`"tls":"on \\(CN=runner-${i}; sha256 `), `runner ${i}'s start-up line`)
      const keyBody = fs.readFileSync(certificates[i]!.key, "utf8").split("\n")[1]!
      assert.notInclude(server.logs(), keyBody)
    })

    // Both hold shards, every shard is held, and each holds some of the tickers (by their shard and cluster_locks).
    await waitFor("shards on both runners", async () => (await holders()).size === 2)
    const placement = async () => {
      const rows = await admin(`SELECT shard_id, address FROM ${schema}.cluster_locks WHERE address IS NOT NULL`)
      const byShard = new Map(rows.map((row) => [String(row.shard_id), String(row.address)]))
      return byShard.size === SHARDS ? TICKERS.map((ticker) => byShard.get(`default:${shardOf(ticker, SHARDS)}`)) : []
    }
    await waitFor("every shard held", async () => (await placement()).length === TICKERS.length)
    const holderOf = await placement()
    for (const address of addresses)
      assert.isTrue(
        holderOf.includes(address),
        `no ticker on ${address}: ${JSON.stringify(holderOf)} (a 1-in-500 placement; run again)`
      )

    const buy = (port: number, ticker: string) =>
      requestChild(port, {
        method: "POST",
        path: `/api/tokens/${ticker}/buy`,
        headers: { authorization: `Bearer ${key}` },
        body: { user_id: wallet.address, amount: 0.5 }
      })
    let answered = 0
    const tradeEverywhere = async (when: string) => {
      for (const [i, server] of servers.entries())
        for (const [t, ticker] of TICKERS.entries()) {
          const answer = await buy(server.port, ticker)
          const where = holderOf[t] === addresses[i] ? "its own" : "the other runner's"
          assert.strictEqual(
            answer.status,
            200,
            `${when}: ${ticker} (${where}) through :${server.port}: ${answer.body}`
          )
          answered++
        }
    }
    // Each port trades every ticker: those on the other runner go over the TLS runner port.
    await tradeEverywhere("over TLS")

    // Strangers at each runner port: plain TCP, TLS without a certificate, TLS with a certificate of another CA (which
    // trusts the runners' CA, so only the runner's check of the client refuses it). Each is closed; none gets an
    // answer; the runner logs the refusal.
    const refusedBefore = servers.map((server) => server.logs().split("runner port: connection refused").length - 1)
    for (const port of runnerPorts) {
      const plain = await knock(() => net.connect({ host: "127.0.0.1", port }), false)
      assert.isFalse(plain.handshake)
      const dial = (options: tls.ConnectionOptions) =>
        knock(
          () =>
            tls.connect({
              host: "127.0.0.1",
              port,
              ca: fs.readFileSync(ca.cert),
              checkServerIdentity: () => undefined,
              ...options
            }),
          true
        )
      const anonymous = await dial({})
      assert.strictEqual(anonymous.received, 0, "a TLS client without a certificate got application data")
      const foreign = await dial({ cert: fs.readFileSync(intruder.cert), key: fs.readFileSync(intruder.key) })
      assert.strictEqual(foreign.received, 0, "a TLS client with another CA's certificate got application data")
    }
    await waitFor("each runner to log three refusals", async () =>
      servers.every(
        (server, i) => server.logs().split("runner port: connection refused").length - 1 >= refusedBefore[i]! + 3
      )
    )
    // Why, and from where: not TLS at all, no certificate, a certificate the shared CA did not sign.
    for (const server of servers)
      for (const reason of [
        "ERR_SSL_WRONG_VERSION_NUMBER",
        "ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE",
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE"
      ])
        assert.match(server.logs(), new RegExp(`"reason":"${reason}","remote":"127\\.0\\.0\\.1:\\d+"`), reason)

    // The runners are still up, still share the shards, and still trade each other's tickers.
    for (const server of servers) assert.strictEqual(server.child.exitCode, null)
    assert.strictEqual((await holders()).size, 2)
    await tradeEverywhere("after the strangers")

    const journal = await admin(`SELECT count(*) AS n FROM ${schema}.market_trades`)
    assert.strictEqual(Number(journal[0]!.n), answered)
    const audit = await ctl(["market", "audit"])
    assert.isTrue(audit.ok, JSON.stringify(audit.problems))
  }, 300_000)

  it("a runner whose certificate is not signed by the CA it is given stops at start with one line, exit 1", async () => {
    const pki = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-tls-pki-"))
    const ca = makeCa(pki, "keel-runners-ca")
    const intruder = makeCa(path.join(pki, "elsewhere"), "another-ca").issue("intruder")
    const { shared, dir } = await runnersFixture(children, schemas)
    const run = await runCtl(["serve", "--port", "0"], {
      ...process.env,
      ...shared,
      KEEL_DATA_DIR: path.join(dir, "refused"),
      KEEL_CLUSTER_MODE: "runners",
      KEEL_RUNNER_ADDRESS: "127.0.0.1:7400",
      ...runnerTlsEnv(ca.cert, intruder)
    })
    assert.strictEqual(run.code, 1, run.stderr)
    const last = run.stderr.trim().split("\n").at(-1) ?? ""
    assert.match(last, /^ctl: KEEL_RUNNER_TLS_CERT \(.*intruder\.crt, CN=intruder\) is not signed by a CA of/)
    assert.notInclude(run.stderr, fs.readFileSync(intruder.key, "utf8").split("\n")[1]!)
  }, 120_000)
})

describe("ctl config show and the runner port's TLS", () => {
  it("says on, off or incomplete, and shows neither the files' contents nor the key", async () => {
    const pki = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-tls-pki-"))
    const ca = makeCa(pki, "keel-runners-ca")
    const certificate = ca.issue("runner-0")
    const show = async (env: Record<string, string>) => {
      const run = await runCtl(["config", "show", "--json"], {
        ...process.env,
        KEEL_DATA_DIR: path.join(pki, "data"),
        KEEL_DATABASE_URL: undefined,
        ...env
      })
      assert.strictEqual(run.code, 0, run.stderr)
      return { settings: JSON.parse(run.stdout) as Record<string, unknown>, text: run.stdout }
    }
    const on = await show(runnerTlsEnv(ca.cert, certificate))
    assert.strictEqual(on.settings.runner_tls, "on")
    for (const file of [ca.cert, certificate.cert, certificate.key])
      assert.notInclude(on.text, fs.readFileSync(file, "utf8").split("\n")[1]!)
    assert.strictEqual((await show({})).settings.runner_tls, "off")
    assert.strictEqual((await show({ KEEL_RUNNER_TLS_CA: ca.cert })).settings.runner_tls, "incomplete")
  }, 120_000)
})
