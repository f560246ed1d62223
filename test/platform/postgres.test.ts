import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import pg from "pg"
import { runCli } from "../support/cli.js"
import {
  AppConfigTest,
  Database,
  databaseFromConfig,
  isRetryable,
  pgScratchSchema,
  redactDatabaseUrl,
  SqlDialect,
  SqlDirect,
  TestDatabase,
  withSearchPath
} from "../support/keel.js"
import { freshSchema, postgresSkipReason, testDatabaseUrl } from "../support/pg-schema.js"

/**
 * When this file runs: as every PostgreSQL test file does (test/support/pg-schema.ts), with KEEL_TEST_DATABASE_URL
 * (CI's `npm run test:pg` step, which `.ci/run` points at a database made for the run), or else when a PostgreSQL
 * answers on 127.0.0.1:5432 (a developer's machine: the setup, trust auth, database `test`). Without either
 * it is skipped — except in CI, where a missing server is a broken CI and fails the file instead.
 */
const base = Redacted.make(testDatabaseUrl)

/** A TCP port nothing listens on (bound, then closed). */
const closedPort = () =>
  Effect.promise(
    () =>
      new Promise<number>((resolve) => {
        const server = net.createServer()
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as net.AddressInfo
          server.close(() => resolve(port))
        })
      })
  )

/** A server that accepts connections and never says a word: what a wrong port on a busy box can look like. */
const silentServer = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ server: net.Server; port: number }>((resolve) => {
        const server = net.createServer(() => {})
        server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as net.AddressInfo).port }))
      })
  ),
  ({ server }) =>
    Effect.sync(() => {
      server.close()
      // Connections it accepted would keep it open.
      server.unref()
    })
)

const freshDataDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "keel-pg-")), "data")

/** Whether a schema exists, asked on a connection of its own. */
const schemaExists = (schema: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = ${schema}`.pipe(
      Effect.map((rows) => rows[0]?.n === 1)
    )
  ).pipe(Effect.provide(pgScratchSchema({ url: base })))

describe.skipIf(postgresSkipReason !== undefined)("PostgreSQL: the connection, the dialect, the test harness", () => {
  it.effect("KEEL_DATABASE_URL selects PostgreSQL (application_name keel, dialect pg); without it, SQLite", () =>
    Effect.gen(function* () {
      const onPg = yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ app: string }>`SELECT current_setting('application_name') AS app`
        return { dialect: (yield* SqlDialect).name, app: row?.app }
      }).pipe(Effect.provide(databaseFromConfig.pipe(Layer.provide(AppConfigTest({ databaseUrl: Option.some(base) })))))
      assert.deepStrictEqual(onPg, { dialect: "pg", app: "keel" })
      const onSqlite = yield* Effect.map(SqlDialect, (dialect) => dialect.name).pipe(
        Effect.provide(databaseFromConfig.pipe(Layer.provide(AppConfigTest())))
      )
      assert.strictEqual(onSqlite, "sqlite")
    })
  )

  it.effect("the test layers choose PostgreSQL with KEEL_TEST_DATABASE_URL, in-memory SQLite without", () =>
    Effect.gen(function* () {
      const onPg = yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ schema: string }>`SELECT current_schema() AS schema`
        return { dialect: (yield* SqlDialect).name, schema: row?.schema ?? "" }
      }).pipe(
        Effect.provide(TestDatabase),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["KEEL_TEST_DATABASE_URL", Redacted.value(base)]])))
      )
      assert.strictEqual(onPg.dialect, "pg")
      assert.match(onPg.schema, /^keel_t_[0-9a-f]{12}$/)
      const onSqlite = yield* Effect.map(SqlDialect, (dialect) => dialect.name).pipe(
        Effect.provide(TestDatabase),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      assert.strictEqual(onSqlite, "sqlite")
    })
  )

  it.effect("each layer has a schema of its own: its tables unseen by the others, dropped when released", () =>
    Effect.gen(function* () {
      const inSchema = (item: string) =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE stock (item TEXT PRIMARY KEY)`
          yield* sql`INSERT INTO stock (item) VALUES (${item})`
          const [where] = yield* sql<{ schema: string }>`SELECT current_schema() AS schema`
          return {
            schema: where?.schema ?? "",
            items: (yield* sql<{ item: string }>`SELECT item FROM stock`).map((r) => r.item)
          }
        }).pipe(Effect.provide(pgScratchSchema({ url: base })))
      // Side by side, as two test files run: the same table name, two tables.
      const [a, b] = yield* Effect.all([inSchema("apples"), inSchema("pears")], { concurrency: 2 })
      assert.deepStrictEqual(a?.items, ["apples"])
      assert.deepStrictEqual(b?.items, ["pears"])
      assert.notStrictEqual(a?.schema, b?.schema)
      assert.isFalse(yield* schemaExists(a?.schema ?? ""))
      assert.isFalse(yield* schemaExists(b?.schema ?? ""))
    })
  )

  it.effect("the dialect comes from the client: numbered placeholders, BEGIN, real SQLSTATEs classified", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const dialect = yield* SqlDialect
      assert.strictEqual(dialect.name, "pg")
      assert.strictEqual(dialect.beginWrite, "BEGIN")
      assert.strictEqual(dialect.text("SELECT ? WHERE '?' <> ?"), "SELECT $1 WHERE '?' <> $2")
      yield* sql`CREATE TABLE stock (item TEXT PRIMARY KEY, n BIGINT NOT NULL)`
      // SqlDirect's written-out statements run on PostgreSQL through the dialect: BEGIN, `?` numbered.
      const direct = yield* SqlDirect
      yield* direct.transaction((db) =>
        Effect.zipRight(
          db.run("INSERT INTO stock (item, n) VALUES (?, ?)", ["pears", 3]),
          db.run("UPDATE stock SET n = n + ? WHERE item = ?", [2, "pears"])
        )
      )
      assert.deepStrictEqual(yield* sql<{ n: string }>`SELECT n FROM stock`, [{ n: "5" }])
      const duplicate = yield* Effect.flip(sql`INSERT INTO stock (item, n) VALUES ('pears', 1)`)
      assert.isTrue(dialect.uniqueViolation(duplicate))
      assert.isFalse(dialect.retryable(duplicate))
      // 55P03: a row another transaction holds, asked for with NOWAIT from another connection of the pool.
      const held = yield* Deferred.make<void>()
      const done = yield* Deferred.make<void>()
      const holder = yield* sql
        .withTransaction(
          sql`SELECT n FROM stock WHERE item = 'pears' FOR UPDATE`.pipe(
            Effect.zipRight(Deferred.succeed(held, undefined)),
            Effect.zipRight(Deferred.await(done))
          )
        )
        .pipe(Effect.fork)
      yield* Deferred.await(held)
      const locked = yield* Effect.flip(sql`SELECT n FROM stock WHERE item = 'pears' FOR UPDATE NOWAIT`)
      yield* Deferred.succeed(done, undefined)
      yield* Fiber.join(holder)
      assert.isTrue(dialect.retryable(locked), String(locked))
      assert.isTrue(isRetryable(locked))
      assert.isFalse(dialect.uniqueViolation(locked))
    }).pipe(Effect.provide(SqlDirect.Default.pipe(Layer.provideMerge(pgScratchSchema({ url: base })))))
  )

  it.effect("Database.info: engine postgresql, the URL without its password, the server's version", () =>
    Effect.gen(function* () {
      const info = yield* (yield* Database).info(["platform"])
      const [shown] = yield* (yield* SqlClient.SqlClient)<{ server_version: string }>`SHOW server_version`
      assert.strictEqual(info.engine, "postgresql")
      assert.strictEqual(info.dialect, "pg")
      assert.strictEqual(info.serverVersion, shown?.server_version)
      assert.strictEqual(info.url, "postgres://keel:***@db.example:5432/keel")
      assert.isUndefined(info.file)
      assert.deepStrictEqual(info.migrations, [])
    }).pipe(
      Effect.provide(
        Database.Default.pipe(
          Layer.provideMerge(pgScratchSchema({ url: base })),
          // What the operator configured (it is only shown here): a password to keep out of sight.
          Layer.provideMerge(
            AppConfigTest({ databaseUrl: Option.some(Redacted.make("postgres://keel:pw-1@db.example:5432/keel")) })
          )
        )
      )
    )
  )

  it.scoped("ctl db status on PostgreSQL: the engine, the URL without its password, the server, every migration", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const url = new URL(withSearchPath(testDatabaseUrl, schema))
      // Trust authentication ignores a password it did not ask for; one given is kept as it is.
      if (url.password === "") url.password = "pw-for-status"
      const password = decodeURIComponent(url.password)
      const env = { KEEL_DATA_DIR: freshDataDir(), KEEL_DATABASE_URL: url.toString() }
      const run = yield* runCli(["db", "status", "--json"], env)
      assert.strictEqual(run.exitCode, 0, run.stderr)
      const info = JSON.parse(run.stdout) as {
        engine: string
        url: string
        serverVersion: string
        migrations: Array<{ domain: string }>
      }
      assert.strictEqual(info.engine, "postgresql")
      assert.strictEqual(info.url, redactDatabaseUrl(url.toString()))
      assert.include(info.url, ":***@")
      assert.match(info.serverVersion, /^\d+/)
      assert.sameMembers(
        [...new Set(info.migrations.map((m) => m.domain))],
        ["platform", "product", "groundtruth", "market", "fleet"]
      )
      const text = yield* runCli(["db", "status"], env)
      assert.strictEqual(text.exitCode, 0, text.stderr)
      assert.match(text.stdout, /^postgresql postgres:\/\/\S+:\*\*\*@\S+ \(server \d+[^)]*\)+\nDOMAIN/)
      for (const output of [run, text]) assert.notInclude(output.stdout + output.stderr, password)
    })
  )

  it.scoped("ctl db migrate with a failing migration: MIGRATION_FAILED in one line, exit 1, no stack trace", () =>
    Effect.gen(function* () {
      const schema = yield* freshSchema
      const url = withSearchPath(testDatabaseUrl, schema)
      // A table the first migration creates, already there with another shape: that migration fails.
      const admin = new pg.Client({ connectionString: url })
      yield* Effect.promise(async () => {
        await admin.connect()
        await admin.query("CREATE TABLE leases (x INTEGER)")
        await admin.end()
      })
      const env = { KEEL_DATA_DIR: freshDataDir(), KEEL_DATABASE_URL: url }
      const text = yield* runCli(["db", "migrate"], env)
      assert.strictEqual(text.exitCode, 1)
      assert.match(
        text.stderr.trim(),
        /^ctl: migrations of platform failed: Migration "1_create_leases" failed: [^\n]*leases[^\n]*$/
      )
      assert.notInclude(text.stderr, "unexpected failure")
      const json = yield* runCli(["db", "migrate", "--json"], env)
      assert.strictEqual(json.exitCode, 1)
      assert.strictEqual((JSON.parse(json.stdout) as { error: { code: string } }).error.code, "MIGRATION_FAILED")
    })
  )

  it.effect("a closed port: DATABASE_UNAVAILABLE in one line, exit 1, the password nowhere in the output", () =>
    Effect.gen(function* () {
      const port = yield* closedPort()
      const password = "s3cr3t-Pw"
      const dataDir = freshDataDir()
      const env = { KEEL_DATA_DIR: dataDir, KEEL_DATABASE_URL: `postgres://keel:${password}@127.0.0.1:${port}/keel` }
      const status = yield* runCli(["db", "status", "--json"], env)
      assert.strictEqual(status.exitCode, 1)
      const error = (JSON.parse(status.stdout) as { error: { code: string; detail: string } }).error
      assert.strictEqual(error.code, "DATABASE_UNAVAILABLE")
      assert.include(error.detail, `postgres://keel:***@127.0.0.1:${port}/keel`)
      const listed = yield* runCli(["market", "agent", "list"], env)
      assert.strictEqual(listed.exitCode, 1)
      assert.match(
        listed.stderr.trim(),
        new RegExp(
          `^ctl: cannot open the database postgres://keel:\\*\\*\\*@127\\.0\\.0\\.1:${port}/keel: .*ECONNREFUSED`
        )
      )
      for (const run of [status, listed]) assert.notInclude(run.stdout + run.stderr, password)
      // Nothing was made for a SQLite file that is not the database.
      assert.isFalse(fs.existsSync(path.join(dataDir, "keel.db")))
    })
  )

  it.effect("a server that accepts and never answers: DATABASE_UNAVAILABLE after the connect timeout, no hang", () =>
    Effect.gen(function* () {
      const { port } = yield* silentServer
      const run = yield* runCli(["db", "status", "--json"], {
        KEEL_DATA_DIR: freshDataDir(),
        KEEL_DATABASE_URL: `postgres://keel@127.0.0.1:${port}/keel`,
        KEEL_DATABASE_CONNECT_TIMEOUT: "1s"
      })
      assert.strictEqual(run.exitCode, 1)
      const error = (JSON.parse(run.stdout) as { error: { code: string; detail: string } }).error
      assert.strictEqual(error.code, "DATABASE_UNAVAILABLE")
      assert.include(error.detail, `postgres://keel@127.0.0.1:${port}/keel`)
    }).pipe(Effect.scoped)
  )

  it.effect("config show names the URL without its password; a URL that is not postgres:// is refused at start", () =>
    Effect.gen(function* () {
      const shown = yield* runCli(["config", "show", "--json"], {
        KEEL_DATA_DIR: freshDataDir(),
        KEEL_DATABASE_URL: "postgresql://keel:pw%2Fwith%40chars@db.example/keel?sslmode=require&password=again"
      })
      assert.strictEqual(shown.exitCode, 0, shown.stderr)
      const settings = JSON.parse(shown.stdout) as Record<string, unknown>
      assert.strictEqual(settings.database_url, "postgresql://keel:***@db.example/keel?sslmode=require&password=***")
      assert.strictEqual(settings.database_pool, 10)
      assert.notInclude(shown.stdout, "with")
      assert.notInclude(shown.stdout, "again")
      const refused = yield* runCli(["config", "show"], { KEEL_DATABASE_URL: "mysql://keel:pw@db.example/keel" })
      assert.strictEqual(refused.exitCode, 1)
      assert.include(refused.stderr, "KEEL_DATABASE_URL")
      assert.notInclude(refused.stderr, "pw@")
    })
  )

  it("redaction and search_path are plain functions of the URL", () => {
    assert.strictEqual(redactDatabaseUrl("postgres://u@h/db"), "postgres://u@h/db")
    assert.strictEqual(redactDatabaseUrl("postgres://u:p@h:1/db"), "postgres://u:***@h:1/db")
    assert.notInclude(redactDatabaseUrl("postgres://u:p w@[bad"), "p w")
    const withPath = new URL(withSearchPath("postgres://u@h/db?options=-c%20statement_timeout%3D5s", "keel_t_x"))
    assert.strictEqual(withPath.searchParams.get("options"), "-c statement_timeout=5s -c search_path=keel_t_x")
    assert.throws(() => withSearchPath("postgres://u@h/db", "x; DROP"))
  })
})
