import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { packageVersion } from "../support/keel.js"
import { cliOnPostgres } from "../support/pg-datadir.js"

const freshDataDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-cli-")), "data")

describe("ctl", () => {
  it.effect("--help lists the command groups and opens no database", () =>
    Effect.gen(function* () {
      const dataDir = freshDataDir()
      const run = yield* runCli(["--help"], { KEEL_DATA_DIR: dataDir })
      assert.strictEqual(run.exitCode, 0)
      for (const group of ["serve", "db", "gt", "lease", "blog", "config"]) assert.include(run.stdout, `\n  ${group} `)
      assert.isFalse(fs.existsSync(dataDir))
    })
  )

  it.effect("serve --help describes the surfaces and the port", () =>
    Effect.gen(function* () {
      const run = yield* runCli(["serve", "--help"])
      assert.strictEqual(run.exitCode, 0)
      assert.include(run.stdout, "--surface")
      assert.include(run.stdout, "groundtruth")
      assert.include(run.stdout, "--port")
    })
  )

  it.effect(
    "a command's own --help piped is plain text naming the whole command; --wizard without a terminal is refused",
    () =>
      Effect.gen(function* () {
        const help = yield* runCli(["lease", "acquire", "--help"])
        assert.strictEqual(help.exitCode, 0)
        assert.notInclude(help.stdout, String.fromCharCode(27))
        assert.include(help.stdout, "$ ctl lease acquire --holder text")
        const wizard = yield* runCli(["lease", "acquire", "x", "--holder", "a", "--wizard"])
        assert.strictEqual(wizard.exitCode, 2)
        assert.include(wizard.stderr, "--wizard needs a terminal")
      })
  )

  it.effect("--version prints the package version", () =>
    Effect.gen(function* () {
      const run = yield* runCli(["--version"])
      assert.strictEqual(run.exitCode, 0)
      assert.strictEqual(run.stdout.trim(), packageVersion())
      assert.match(packageVersion(), /^\d+\.\d+\.\d+/)
    })
  )

  it.effect("a usage error exits 2; an unknown command too", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* runCli(["lease", "acquire", "k"])).exitCode, 2)
      assert.strictEqual((yield* runCli(["no-such-group"])).exitCode, 2)
      assert.strictEqual((yield* runCli(["lease", "acquire", "k", "--holder", "a", "--ttl", "soon"])).exitCode, 2)
      const outside = yield* runCli([
        "host",
        "storage-root-reconcile",
        "box",
        "--transaction",
        "../x",
        "--phase",
        "status"
      ])
      assert.strictEqual(outside.exitCode, 2)
      assert.include(outside.stderr, "--transaction must be 1 to 128 letters, digits")
      // A probe of something that is no URL is no probe (it answered ok, "unreachable").
      const notUrl = yield* runCli(["service", "verify", "--here", "--url", "not a url", "--json"])
      assert.strictEqual(notUrl.exitCode, 2)
      assert.include(notUrl.stderr, "--url: expected an http(s) URL")
    })
  )

  it.effect("an unknown command is a usage error (exit 2) at any depth, --help or not", () =>
    Effect.gen(function* () {
      for (const args of [
        ["nosuch", "--help"],
        ["market", "nosuch", "--help"],
        ["market", "agent", "nosuch"]
      ]) {
        const run = yield* runCli(args)
        assert.strictEqual(run.exitCode, 2, args.join(" "))
        assert.include(run.stderr, `unknown command 'nosuch'`)
      }
      assert.include((yield* runCli(["market", "nosuch"])).stderr, "one of: agent, audit, coin, keys")
      // Known commands still answer their help, and what follows -- is argv, never a command.
      assert.strictEqual((yield* runCli(["market", "agent", "list", "--help"])).exitCode, 0)
    })
  )

  it.effect("a group's help lists every command under it once, by its full path, and opens nothing", () =>
    Effect.gen(function* () {
      const dataDir = freshDataDir()
      const root = yield* runCli(["--help"], { KEEL_DATA_DIR: dataDir })
      assert.strictEqual(root.exitCode, 0)
      for (const line of [
        "market agent create --ticker text",
        "vault item put",
        "host beacon write",
        "space cleaners list"
      ])
        assert.include(root.stdout, `  ${line}`)
      for (const doubled of ["market market", "vault vault", "host host", "space space"])
        assert.notInclude(root.stdout, doubled)
      const group = yield* runCli(["market", "agent"], { KEEL_DATA_DIR: dataDir })
      assert.strictEqual(group.exitCode, 0)
      assert.include(group.stdout, "USAGE\n  ctl market agent <command>")
      assert.match(group.stdout, /\n {2}retire \[--json\] <TICKER> +Retire an agent/)
      assert.notInclude(group.stdout, "market agent create")
      // Help is not work: no database, no data directory.
      assert.isFalse(fs.existsSync(dataDir))
      // A leaf's help and the root's built-in options stay @effect/cli's.
      assert.include((yield* runCli(["market", "agent", "list", "--help"])).stdout, "List agents")
      assert.strictEqual((yield* runCli(["--version"])).stdout.trim(), packageVersion())
    })
  )

  it.effect("config show --json prints the effective settings and opens no database", () =>
    Effect.gen(function* () {
      const dataDir = freshDataDir()
      const run = yield* runCli(["config", "show", "--json"], { KEEL_DATA_DIR: dataDir, KEEL_HTTP_PORT: "9999" })
      assert.strictEqual(run.exitCode, 0)
      const settings = JSON.parse(run.stdout) as Record<string, unknown>
      assert.strictEqual(settings.http_port, 9999)
      assert.strictEqual(settings.data_dir, dataDir)
      assert.strictEqual(settings.database_file, path.join(dataDir, "keel.db"))
      assert.isFalse(fs.existsSync(dataDir))
      // Fleet and vault settings too: where a secret comes from, never the secret; URLs without credentials.
      const withFleet = yield* runCli(["config", "show", "--json"], {
        KEEL_DATA_DIR: dataDir,
        KEEL_HOST: "forge-1",
        KEEL_REGISTRY: "https://ci:hunter2@git.example/fleet.git",
        KEEL_VAULT_KEY: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYnl0ZXM="
      })
      const fleet = JSON.parse(withFleet.stdout) as Record<string, unknown>
      assert.strictEqual(fleet.host, "forge-1")
      assert.strictEqual(fleet.registry, "https://git.example/fleet.git")
      assert.strictEqual(fleet.vault_key, "KEEL_VAULT_KEY (environment)")
      assert.strictEqual(fleet.object_dir, path.join(dataDir, "objects"))
      assert.strictEqual(fleet.janitor_state_dir, path.join(dataDir, "janitor"))
      assert.notInclude(withFleet.stdout, "hunter2")
      assert.notInclude(withFleet.stdout, "c2VjcmV0")
      // The actor runtime's settings (docs/cluster.md): single by default, a runner's address when set.
      assert.strictEqual(settings.cluster_mode, "single")
      assert.strictEqual(settings.runner_address, null)
      const asRunner = yield* runCli(["config", "show", "--json"], {
        KEEL_DATA_DIR: dataDir,
        KEEL_CLUSTER_MODE: "runners",
        KEEL_RUNNER_ADDRESS: "10.0.0.2:7400",
        KEEL_CLUSTER_SHARDS: "60"
      })
      const runner = JSON.parse(asRunner.stdout) as Record<string, unknown>
      assert.deepStrictEqual(
        [runner.cluster_mode, runner.runner_address, runner.cluster_shards, runner.runner_lock_expiration],
        ["runners", "10.0.0.2:7400", 60, "6s"]
      )
      // The Redis of the shared rate limits: without its password; none by default.
      assert.isNull(runner.redis_url)
      const withRedis = yield* runCli(["config", "show", "--json"], {
        KEEL_DATA_DIR: dataDir,
        KEEL_REDIS_URL: "redis://keel:hunter2@cache.example:6380/2"
      })
      const shared = JSON.parse(withRedis.stdout) as Record<string, unknown>
      assert.strictEqual(shared.redis_url, "redis://keel:***@cache.example:6380/2")
      assert.strictEqual(shared.redis_prefix, "keel:rate:")
      assert.notInclude(withRedis.stdout, "hunter2")
    })
  )

  it.effect("a bad setting is a one-line failure, exit 1", () =>
    Effect.gen(function* () {
      const run = yield* runCli(["config", "show"], { KEEL_HTTP_PORT: "eighty" })
      assert.strictEqual(run.exitCode, 1)
      assert.include(run.stderr, "KEEL_HTTP_PORT")
    })
  )

  // About the SQLite file: under test:pg the data dir's database is PostgreSQL (postgres.test.ts covers its status).
  it.effect.skipIf(cliOnPostgres)("db status shows the SQLite file in WAL mode and every applied migration", () =>
    Effect.gen(function* () {
      const dataDir = freshDataDir()
      const run = yield* runCli(["db", "status", "--json"], { KEEL_DATA_DIR: dataDir })
      assert.strictEqual(run.exitCode, 0)
      const info = JSON.parse(run.stdout) as {
        engine: string
        file: string
        journalMode: string
        migrations: Array<{ domain: string }>
      }
      assert.strictEqual(info.file, path.join(dataDir, "keel.db"))
      assert.strictEqual(info.journalMode, "wal")
      assert.strictEqual(info.engine, "sqlite")
      assert.isTrue(info.migrations.some((m) => m.domain === "platform"))
      assert.isTrue(fs.existsSync(info.file))
    })
  )

  it.effect("db migrate applies pending migrations once", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const first = JSON.parse((yield* runCli(["db", "migrate", "--json"], env)).stdout) as { applied: Array<unknown> }
      assert.isAbove(first.applied.length, 0)
      const second = JSON.parse((yield* runCli(["db", "migrate", "--json"], env)).stdout) as { applied: Array<unknown> }
      assert.strictEqual(second.applied.length, 0)
    })
  )

  it.effect("the beacon's routing file is owner-only: KEEL_REGISTRY may carry a credential; the units are public", () =>
    Effect.gen(function* () {
      const dir = path.join(freshDataDir(), "units")
      const run = yield* runCli(
        [
          "host",
          "beacon",
          "install",
          "--dir",
          dir,
          "--control-plane-url",
          "https://cp.example",
          "--grant-file",
          "/etc/keel/beacon.grant"
        ],
        { KEEL_DATA_DIR: freshDataDir(), KEEL_REGISTRY: "https://bob:s3cr3tTOKEN@git.example.com/fleet.git" }
      )
      assert.strictEqual(run.exitCode, 0, run.stderr)
      const modes = Object.fromEntries(
        fs.readdirSync(dir).map((name) => [name, fs.statSync(path.join(dir, name)).mode & 0o777])
      )
      assert.strictEqual(modes["beacon.env"], 0o600)
      assert.strictEqual(modes["keel-beacon.service"], 0o644)
      assert.strictEqual(modes["keel-beacon.timer"], 0o644)
    })
  )

  it.effect(
    "ctl gt search keeps /search's bounds and codes: an unknown repo is UNKNOWN_REPO, bad bounds are usage errors",
    () =>
      Effect.gen(function* () {
        const env = { KEEL_DATA_DIR: freshDataDir() }
        const unknown = yield* runCli(["gt", "search", "x", "--repo", "nope", "--json"], env)
        assert.strictEqual(unknown.exitCode, 1)
        assert.deepStrictEqual(JSON.parse(unknown.stdout), {
          error: { code: "UNKNOWN_REPO", detail: "no source named nope" }
        })
        for (const args of [[""], ["x", "--limit", "0"], ["x", "--limit", "51"]]) {
          const refused = yield* runCli(["gt", "search", ...args], env)
          assert.strictEqual(refused.exitCode, 2, args.join(" "))
        }
      })
  )

  it.effect("ctl machine pause/resume --json answer the queue's state in snake_case", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const paused = yield* runCli(["machine", "pause", "--json"], env)
      assert.strictEqual(paused.exitCode, 0, paused.stderr)
      assert.deepInclude(JSON.parse(paused.stdout), { paused: true, oldest_queued_age_ms: null })
      const resumed = yield* runCli(["machine", "resume", "--json"], env)
      assert.strictEqual(JSON.parse(resumed.stdout).paused, false)
    })
  )

  it.effect(
    "an invalid setting is one configuration line naming it (exit 1, INVALID_CONFIGURATION), never a crash",
    () =>
      Effect.gen(function* () {
        for (const [name, value] of [
          ["KEEL_TRUSTED_PROXIES", "garbage"],
          ["KEEL_SQLITE_CACHE_MB", "-5"],
          ["GT_TRUST_WEIGHTS", "canonical=high"],
          // A dropped pair, a hex weight, a tier twice: refused, never read loosely.
          ["GT_TRUST_WEIGHTS", "canonical=1,,reference=0.5"],
          ["GT_TRUST_WEIGHTS", "canonical=0x10"],
          ["GT_TRUST_WEIGHTS", "canonical=1,canonical=2"],
          ["GT_CHUNK_MAX_LINES", "0"],
          ["GT_CHUNK_OVERLAP_LINES", "50"],
          ["GT_MAX_FILE_BYTES", "-1"],
          ["GT_ASK_SOURCES", "21"],
          ["GT_ASK_MIN_SCORE", "2"],
          ["KEEL_CLUSTER_POLL_INTERVAL", "soon"]
        ] as const) {
          const run = yield* runCli(["market", "agent", "list", "--json"], {
            KEEL_DATA_DIR: freshDataDir(),
            [name]: value
          })
          assert.strictEqual(run.exitCode, 1, name)
          assert.strictEqual(
            JSON.parse(run.stdout || "{}").error?.code,
            "INVALID_CONFIGURATION",
            `${name}: ${run.stdout} | ${run.stderr}`
          )
          assert.match(run.stderr, new RegExp(`^ctl: invalid configuration: \\(Invalid data at ${name}: `), name)
          assert.notInclude(run.stderr, "unexpected failure", name)
        }
        // Short chunks alone are fine: the unset overlap shrinks to fit them; a tier name is any name.
        for (const env of [
          { GT_CHUNK_MAX_LINES: "3" },
          { GT_TRUST_WEIGHTS: "canonical=1,reference=0.8,community=0.6,team.docs=0.7" }
        ]) {
          const run = yield* runCli(["market", "agent", "list", "--json"], { KEEL_DATA_DIR: freshDataDir(), ...env })
          assert.strictEqual(run.exitCode, 0, `${JSON.stringify(env)}: ${run.stderr}`)
        }
      })
  )

  it.effect(
    "ctl market coin mint: only into a wallet, an existing agent or the treasury, never past the ledger's ceiling",
    () =>
      Effect.gen(function* () {
        const env = { KEEL_DATA_DIR: freshDataDir(), KEEL_DEMO_DATA: "false" }
        const wallet = "0x52908400098527886E0F7030069857D2E4169EE7"
        const mint = (to: string, amount: string, reason = "test") =>
          runCli(["market", "coin", "mint", "--to", to, "--amount", amount, "--reason", reason, "--json"], env)
        const first = yield* mint(wallet.toLowerCase(), "4611686018")
        assert.strictEqual(first.exitCode, 0, first.stderr)
        // The account as clients see it: the wallet in EIP-55 form whatever case it was typed in.
        assert.deepStrictEqual(JSON.parse(first.stdout), {
          entry: 1,
          to: `wallet:${wallet}`,
          amount: 4611686018,
          amount_str: "4611686018",
          balance: 4611686018,
          balance_str: "4611686018"
        })
        // A second one would pass 2^62 nano-units (SQLite's integers turn to floating point past 2^63).
        const over = yield* mint(wallet, "4611686018")
        assert.strictEqual(over.exitCode, 1)
        assert.strictEqual(JSON.parse(over.stdout).error.code, "MINT_REFUSED")
        for (const [to, code] of [
          ["garbage", "MINT_REFUSED"],
          ["wallet:garbage", "MINT_REFUSED"],
          ["system:issuance", "MINT_REFUSED"],
          ["curve:SAGE", "MINT_REFUSED"],
          ["agent:NOPE", "AGENT_NOT_FOUND"]
        ] as const) {
          const refused = yield* mint(to, "1")
          assert.strictEqual(refused.exitCode, 1, to)
          assert.strictEqual(JSON.parse(refused.stdout).error.code, code, to)
        }
        assert.strictEqual(JSON.parse((yield* mint(wallet, "1", " ")).stdout).error.code, "MINT_REFUSED")
        const audit = yield* runCli(["market", "audit", "--json"], env)
        assert.strictEqual(audit.exitCode, 0, audit.stderr)
        assert.deepInclude(JSON.parse(audit.stdout), { ok: true, entries: 1 })
      })
  )

  it.effect("an amount option is a usage error in one line naming it (exit 2): nothing stored, no stack trace", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir(), KEEL_DEMO_DATA: "false" }
      for (const [args, message] of [
        [["market", "coin", "set-price", "--price", "1e30"], "--price: must be at most 4611686018.427387904"],
        [["market", "coin", "set-price", "--price", "0"], "--price: must be more than 0"],
        [["market", "coin", "set-price", "--price", "1e-30"], "--price: is below the smallest amount, 0.000000001"],
        [["market", "coin", "set-price", "--price", "ten"], "--price: expected a decimal amount such as 12.5"],
        [
          ["market", "agent", "create", "--ticker", "HOT", "--name", "Hot", "--burn-rate", "1e30"],
          "--burn-rate: must be at most"
        ],
        [
          ["market", "agent", "create", "--ticker", "HOT", "--name", "Hot", "--burn-rate", "-1"],
          "--burn-rate: must not be negative"
        ],
        [
          ["market", "coin", "mint", "--to", "platform:treasury", "--amount", "0", "--reason", "x"],
          "--amount: must be more than 0"
        ]
      ] as const) {
        const run = yield* runCli([...args, "--json"], env)
        assert.strictEqual(run.exitCode, 2, args.join(" "))
        assert.include(run.stderr, message, args.join(" "))
        assert.notInclude(run.stderr, "Transformation", args.join(" "))
        assert.notInclude(run.stderr, "SqlError", args.join(" "))
      }
      const agents = yield* runCli(["market", "agent", "list", "--json"], env)
      assert.deepStrictEqual(JSON.parse(agents.stdout), [])
      const price = yield* runCli(["market", "coin", "set-price", "--price", "2.5", "--json"], env)
      assert.strictEqual(price.exitCode, 0, price.stderr)
      assert.deepStrictEqual(JSON.parse(price.stdout), { price: 2.5, price_str: "2.5" })
    })
  )

  it.effect("a number option out of its range is a usage error naming it (exit 2), before anything is opened", () =>
    Effect.gen(function* () {
      const dataDir = freshDataDir()
      for (const [args, message] of [
        [["serve", "--port", "99999"], "--port: must be an integer from 0 to 65535"],
        [["machine", "work", "--concurrency", "0", "--until-empty"], "--concurrency: must be an integer from 1 to 64"],
        [["machine", "logs", "1", "--limit", "-5"], "--limit: must be an integer from 1 to 10000"],
        [["machine", "logs", "1", "--cursor", "-1"], "--cursor: must be an integer of at least 0"],
        [["disk-cleanup", "--watch", "--interval", "0"], "--interval: must be an integer from 1 to 86400"],
        [["fleet", "probe", "h", "--pause-ms", "-1"], "--pause-ms: must be an integer from 0 to 60000"],
        [["product", "summary", "--site", "x", "--limit", "0"], "--limit: must be an integer from 1 to 100"],
        [["gt", "search", "q", "--limit", "51"], "--limit: must be an integer from 1 to 50"]
      ] as const) {
        const run = yield* runCli([...args], { KEEL_DATA_DIR: dataDir })
        assert.strictEqual(run.exitCode, 2, args.join(" "))
        assert.strictEqual(run.stderr.trim(), message, args.join(" "))
      }
      assert.isFalse(fs.existsSync(dataDir))
    })
  )

  // About the SQLite file: under test:pg the data dir's database is PostgreSQL (postgres.test.ts covers a server
  // that cannot be reached).
  it.effect.skipIf(cliOnPostgres)(
    "a data dir whose keel.db is no SQLite database: one line, DATABASE_UNAVAILABLE, the file left as it was",
    () =>
      Effect.gen(function* () {
        const dataDir = freshDataDir()
        fs.mkdirSync(dataDir, { recursive: true })
        const garbage = Buffer.alloc(8192, 0x5a)
        fs.writeFileSync(path.join(dataDir, "keel.db"), garbage)
        const status = yield* runCli(["db", "status", "--json"], { KEEL_DATA_DIR: dataDir })
        assert.strictEqual(status.exitCode, 1)
        assert.strictEqual(JSON.parse(status.stdout).error.code, "DATABASE_UNAVAILABLE")
        const listed = yield* runCli(["market", "agent", "list"], { KEEL_DATA_DIR: dataDir })
        assert.strictEqual(listed.exitCode, 1)
        assert.match(listed.stderr.trim(), /^ctl: cannot open the database .*keel\.db: file is not a database$/)
        assert.deepStrictEqual(fs.readFileSync(path.join(dataDir, "keel.db")), garbage)
      })
  )

  it.effect("a bad duration is a usage error in one sentence (exit 2), not a schema tree", () =>
    Effect.gen(function* () {
      const run = yield* runCli(["lease", "acquire", "x:y", "--holder", "a", "--ttl", "bogus"], {
        KEEL_DATA_DIR: freshDataDir()
      })
      assert.strictEqual(run.exitCode, 2)
      assert.include(run.stderr + run.stdout, "--ttl: expected a duration such as 30s, 5m, 2h, 1d (at most 36500d)")
      assert.notInclude(run.stderr + run.stdout, "Transformation")
      const zero = yield* runCli(["lease", "acquire", "x:y", "--holder", "a", "--ttl", "0s"], {
        KEEL_DATA_DIR: freshDataDir()
      })
      assert.strictEqual(zero.exitCode, 2)
      assert.include(zero.stderr + zero.stdout, "--ttl: must be longer than 0")
      // Past 100 years "now + ttl" is no date: refused before anything is stored, never echoed.
      const dataDir = freshDataDir()
      const huge = yield* runCli(["lease", "acquire", "x:y", "--holder", "a", "--ttl", "99999999d"], {
        KEEL_DATA_DIR: dataDir
      })
      assert.strictEqual(huge.exitCode, 2)
      assert.notInclude(huge.stderr + huge.stdout, "99999999d")
      const listed = yield* runCli(["lease", "list", "--json"], { KEEL_DATA_DIR: dataDir })
      assert.strictEqual(listed.exitCode, 0, listed.stderr)
      assert.notInclude(listed.stdout, "x:y")
      const badKey = yield* runCli(["lease", "acquire", "bad key!", "--holder", "a"], { KEEL_DATA_DIR: freshDataDir() })
      assert.strictEqual(badKey.exitCode, 2)
      assert.include(
        badKey.stderr + badKey.stdout,
        "KEY: must be letters, digits and . _ : / -, at most 200 characters"
      )
      assert.notInclude(badKey.stderr + badKey.stdout, "bad key!")
    })
  )

  it.live("with --json, every failure answers one {error: {code, detail}} document on stdout, never two", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      yield* runCli(["lease", "acquire", "janitor:web-2", "--holder", "alice", "--ttl", "5m"], env)
      const refused = yield* runCli(["lease", "acquire", "janitor:web-2", "--holder", "bob", "--json"], env)
      assert.strictEqual(refused.exitCode, 1)
      const answer = JSON.parse(refused.stdout) as { error: { code: string; detail: string } }
      assert.match(answer.error.code, /^[A-Z][A-Z0-9_]*$/)
      assert.include(answer.error.detail, "held by alice")
      const revoked = yield* runCli(["vault", "grant", "revoke", "grant_nope", "--json"], env)
      assert.strictEqual(revoked.exitCode, 1)
      assert.match((JSON.parse(revoked.stdout) as { error: { code: string } }).error.code, /^[A-Z][A-Z0-9_]*$/)
      // Without --json: the reason on stderr only.
      const plain = yield* runCli(["vault", "grant", "revoke", "grant_nope"], env)
      assert.strictEqual(plain.stdout, "")
    })
  )

  it.live("lease acquire/list/release: a second holder is refused with exit 1 and a one-line reason", () =>
    Effect.gen(function* () {
      const env = { KEEL_DATA_DIR: freshDataDir() }
      const taken = yield* runCli(
        ["lease", "acquire", "janitor:web-1", "--holder", "alice", "--ttl", "5m", "--json"],
        env
      )
      assert.strictEqual(taken.exitCode, 0)
      assert.strictEqual((JSON.parse(taken.stdout) as { fence: number }).fence, 1)

      const refused = yield* runCli(["lease", "acquire", "janitor:web-1", "--holder", "bob"], env)
      assert.strictEqual(refused.exitCode, 1)
      assert.match(refused.stderr, /^ctl: lease janitor:web-1 is held by alice until \S+$/)

      const listed = yield* runCli(["lease", "list", "--json"], env)
      assert.deepStrictEqual(
        (JSON.parse(listed.stdout) as Array<{ key: string; holder: string }>).map((l) => [l.key, l.holder]),
        [["janitor:web-1", "alice"]]
      )

      assert.strictEqual((yield* runCli(["lease", "release", "janitor:web-1", "--holder", "alice"], env)).exitCode, 0)
      const next = yield* runCli(["lease", "acquire", "janitor:web-1", "--holder", "bob", "--json"], env)
      assert.strictEqual((JSON.parse(next.stdout) as { fence: number }).fence, 2)
    })
  )
})
