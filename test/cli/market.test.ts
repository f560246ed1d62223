import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"

const freshDataDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-cli-market-")), "data")
const WALLET = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

describe("ctl market", () => {
  it.live("agent create launches the agent and prints its API key once; keys list shows only a prefix", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const created = yield* runCli(
        ["market", "agent", "create", "--ticker", "CLIA", "--name", "Cli agent", "--burn-rate", "1.5", "--json"],
        env
      )
      assert.strictEqual(created.exitCode, 0, created.stderr)
      const body = JSON.parse(created.stdout)
      assert.strictEqual(body.agent.ticker, "CLIA")
      assert.strictEqual(body.agent.status, "running")
      assert.strictEqual(body.agent.burn_rate_hourly, 1.5)
      assert.match(body.api_key, /^keel_[A-Za-z0-9_-]{43}$/)
      const keys = JSON.parse((yield* runCli(["market", "keys", "list", "--json"], env)).stdout)
      assert.strictEqual(keys.length, 1)
      assert.strictEqual(keys[0].agent, "CLIA")
      assert.strictEqual(keys[0].prefix, body.api_key.slice(0, 12))
      assert.notInclude(JSON.stringify(keys), body.api_key)
      const duplicate = yield* runCli(["market", "agent", "create", "--ticker", "CLIA", "--name", "Again"], env)
      assert.strictEqual(duplicate.exitCode, 1)
      assert.include(duplicate.stderr, "taken")
    })
  )

  it.live("agent create warns when the agent burns coin it does not have, and says how to fund it", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const human = yield* runCli(
        ["market", "agent", "create", "--ticker", "BURN", "--name", "B", "--burn-rate", "2"],
        env
      )
      assert.strictEqual(human.exitCode, 0, human.stderr)
      const warning =
        "warning: BURN burns 2 coin an hour and holds no coin: it goes bankrupt at its first charge " +
        "(within MARKET_BURN_INTERVAL of a running server); fund it now: " +
        "ctl market coin mint --to agent:BURN --amount <coin> --reason <why>"
      assert.include(human.stderr, warning)
      assert.include(human.stdout, "launched BURN")
      const machine = yield* runCli(
        ["market", "agent", "create", "--ticker", "BURNJ", "--name", "B", "--burn-rate", "0.5", "--json"],
        env
      )
      assert.strictEqual(machine.exitCode, 0, machine.stderr)
      const body = JSON.parse(machine.stdout)
      assert.deepStrictEqual(
        body.warnings.map((w: { code: string }) => w.code),
        ["AGENT_UNFUNDED"]
      )
      assert.include(body.warnings[0].detail, "ctl market coin mint --to agent:BURNJ")
      // Nothing burned, nothing to warn about.
      const free = yield* runCli(["market", "agent", "create", "--ticker", "FREE", "--name", "F", "--json"], env)
      assert.deepStrictEqual(JSON.parse(free.stdout).warnings, [])
      assert.notInclude(free.stderr, "warning")
    })
  )

  it.live("agent pause, resume and retire drive the status; an impossible transition exits 1", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      yield* runCli(["market", "agent", "create", "--ticker", "CLIB", "--name", "B"], env)
      assert.include((yield* runCli(["market", "agent", "pause", "CLIB"], env)).stdout, "CLIB is paused")
      assert.include((yield* runCli(["market", "agent", "resume", "CLIB"], env)).stdout, "CLIB is running")
      assert.include((yield* runCli(["market", "agent", "retire", "CLIB"], env)).stdout, "CLIB is retired")
      const refused = yield* runCli(["market", "agent", "resume", "CLIB"], env)
      assert.strictEqual(refused.exitCode, 1)
      assert.include(refused.stderr, "cannot resume a retired agent")
      const list = JSON.parse((yield* runCli(["market", "agent", "list", "--json"], env)).stdout)
      assert.deepStrictEqual(
        list.map((a: { ticker: string; status: string }) => [a.ticker, a.status]),
        [["CLIB", "retired"]]
      )
    })
  )

  it.live("keys create for a wallet, revoke by id; coin mint to an address; set-price; audit", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const key = JSON.parse((yield* runCli(["market", "keys", "create", "--wallet", WALLET, "--json"], env)).stdout)
      assert.strictEqual(key.wallet, WALLET)
      const revoked = JSON.parse((yield* runCli(["market", "keys", "revoke", key.id, "--json"], env)).stdout)
      assert.isString(revoked[0].revoked_at)
      assert.strictEqual((yield* runCli(["market", "keys", "revoke", "key_nope"], env)).exitCode, 1)
      // A leaked key is revoked by the key itself; an unknown key is never echoed back whole.
      const leaked = JSON.parse((yield* runCli(["market", "keys", "create", "--wallet", WALLET, "--json"], env)).stdout)
      const byKey = JSON.parse((yield* runCli(["market", "keys", "revoke", leaked.api_key, "--json"], env)).stdout)
      assert.strictEqual(byKey[0].id, leaked.id)
      const unknownKey = `keel_${"x".repeat(43)}`
      const notFound = yield* runCli(["market", "keys", "revoke", unknownKey, "--json"], env)
      assert.strictEqual(notFound.exitCode, 1)
      assert.notInclude(notFound.stdout + notFound.stderr, unknownKey)
      const bad = yield* runCli(["market", "keys", "create", "--wallet", "0x123"], env)
      assert.strictEqual(bad.exitCode, 1)
      const minted = JSON.parse(
        (yield* runCli(
          ["market", "coin", "mint", "--to", WALLET, "--amount", "12.5", "--reason", "grant", "--json"],
          env
        )).stdout
      )
      assert.strictEqual(minted.to, `wallet:${WALLET}`) // EIP-55, as clients see wallets
      assert.strictEqual(minted.balance, 12.5)
      assert.strictEqual(
        (yield* runCli(["market", "coin", "mint", "--to", WALLET, "--amount", "-1", "--reason", "x"], env)).exitCode,
        2
      )
      const price = yield* runCli(["market", "coin", "set-price", "--price", "1.25", "--json"], env)
      assert.deepStrictEqual(JSON.parse(price.stdout), { price: 1.25, price_str: "1.25" })
      const audit = JSON.parse((yield* runCli(["market", "audit", "--json"], env)).stdout)
      assert.strictEqual(audit.ok, true)
      assert.strictEqual(audit.coin_supply, 12.5)
    })
  )

  it.live("amount options are bounded before conversion: 64 characters, and no exponent builds a huge number", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const mint = (amount: string) =>
        runCli(["market", "coin", "mint", "--to", WALLET, "--amount", amount, "--reason", "bound"], env)
      const long = yield* mint(`1.${"0".repeat(1_000)}1`)
      assert.strictEqual(long.exitCode, 2)
      assert.include(long.stderr + long.stdout, "--amount: must be written in at most 64 characters")
      const huge = yield* mint("1e999999999")
      assert.strictEqual(huge.exitCode, 2)
      assert.include(huge.stderr + huge.stdout, "--amount: must be at most 4611686018.427387904")
      const exact = yield* mint("123456789.123456789")
      assert.strictEqual(exact.exitCode, 0, exact.stderr)
      assert.include(exact.stdout, "minted 123456789.123456789 to ")
      assert.include(exact.stdout, "balance 123456789.123456789")
    })
  )
})
