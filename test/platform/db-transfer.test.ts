import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { AllDemoSeeders } from "../../src/layers/DemoSeeds.js"
import { ServicesLive } from "../../src/layers/Live.js"
import { AllMigrations } from "../../src/layers/Migrations.js"
import { migrationDifferences, migrationIds } from "../../src/services/platform/DatabaseTransfer.js"
import { seedDemoData } from "../../src/services/platform/DemoData.js"
import * as SqliteImmediate from "../../src/services/platform/sql/SqliteImmediate.js"
import { referenceSchema } from "../../src/services/platform/transfer/Catalog.js"
import { decodeValue, encodeValue, ValueMisfit } from "../../src/services/platform/transfer/Format.js"
import { runCli } from "../support/cli.js"
import { cliOnPostgres, onTestDatabase } from "../support/pg-datadir.js"
import { freshSchema, postgresSkipReason, testDatabaseUrl, urlInSchema } from "../support/pg-schema.js"
import { runCtl } from "../support/server.js"

/**
 * `ctl db export` / `ctl db import` (docs/database.md, "Moving an installation"). The demo data (every domain's
 * seeder, plus rows the demo lacks: bytes, integers past 2^53, text that needs escaping) is exported once from a
 * data dir — SQLite, or under `npm run test:pg` a PostgreSQL schema of its own — and imported into fresh databases.
 * "SQLite → PostgreSQL → SQLite" chooses its engines itself: it runs in the main run when a PostgreSQL answers.
 */

type Env = Record<string, string>

const tempDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/** The environment `ctl` gets for a new data dir (under test:pg, with the URL of that data dir's schema). */
const freshEnv = () =>
  Effect.promise(() => onTestDatabase({ KEEL_DATA_DIR: path.join(tempDir("keel-transfer-"), "data") }))

/** The database an environment names, to read and write behind `ctl`'s back. */
const databaseOf = (env: Env) =>
  env.KEEL_DATABASE_URL !== undefined
    ? PgClient.layer({ url: Redacted.make(env.KEEL_DATABASE_URL), maxConnections: 2 })
    : SqliteImmediate.layer({ filename: path.join(env.KEEL_DATA_DIR!, "keel.db") })

const onDatabase = <A, E>(env: Env, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, databaseOf(env)).pipe(Effect.provideService(SqlClient.SafeIntegers, true), Effect.orDie)

const ctlOk = (args: ReadonlyArray<string>, env: Env) =>
  Effect.tap(runCli(args, env), (run) =>
    Effect.sync(() => assert.strictEqual(run.exitCode, 0, `ctl ${args.join(" ")}: ${run.stderr}${run.stdout}`))
  )

interface FileTable {
  readonly table: string
  readonly rows: number
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }>
}

const fileLines = (file: string) => fs.readFileSync(file, "utf8").trimEnd().split("\n")
const fileTables = (file: string): ReadonlyArray<FileTable> =>
  fileLines(file)
    .slice(1)
    .filter((line) => line.startsWith('{"table"'))
    .map((line) => JSON.parse(line) as FileTable)

/** A value as both engines' drivers give it, made comparable by its column's type (PostgreSQL's int8 is text). */
const normalize = (type: string, value: unknown) =>
  value === null
    ? "null"
    : type === "integer"
      ? `i${BigInt(value as bigint | number | string)}`
      : type === "bytes"
        ? `b${Buffer.from(value as Uint8Array).toString("base64")}`
        : `${type[0]}${String(value)}`

/** Every table's rows, each row its normalized values, sorted: what "the same rows" means across engines. */
const rowsOf = (env: Env, tables: ReadonlyArray<FileTable>) =>
  onDatabase(
    env,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const all: Record<string, Array<string>> = {}
      for (const table of tables) {
        const rows = yield* sql.unsafe<Record<string, unknown>>(
          `SELECT ${table.columns.map((c) => `"${c.name}"`).join(", ")} FROM "${table.table}"`
        )
        all[table.table] = rows
          .map((row) => JSON.stringify(table.columns.map((c) => normalize(c.type, row[c.name]))))
          .sort()
      }
      return all
    })
  )

/** The database's own list of tables, less what an export leaves out by design (the docs' list). */
const tablesIn = (env: Env) =>
  onDatabase(
    env,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const names = yield* sql.onDialectOrElse({
        pg: () =>
          sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
            WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
        orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      })
      return names
        .map((n) => n.name)
        .filter((n) => !/^(sqlite_|keel_migrations_|cluster_|gt_chunks_fts)/.test(n))
        .sort()
    })
  )

const allEmpty = (env: Env, tables: ReadonlyArray<FileTable>) =>
  Effect.map(rowsOf(env, tables), (rows) =>
    Object.entries(rows)
      .filter(([, r]) => r.length > 0)
      .map(([t]) => t)
  )

/** Rows the demo data has none of: every byte value, integers past 2^53, text JSON must escape, a NULL. */
const addUnusualRows = (env: Env) =>
  Effect.gen(function* () {
    yield* ctlOk(
      ["market", "coin", "mint", "--to", "agent:SAGE", "--amount", "20000000", "--reason", "past 2^53 nano-units"],
      env
    )
    yield* onDatabase(
      env,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
        yield* sql`INSERT INTO objects (key, body, size, sha256, modified_at)
          VALUES (${"bin/every-byte"}, ${bytes}, ${256}, ${"x"}, ${9_007_199_254_740_993n})`
        yield* sql`INSERT INTO gt_vectors (digest, model, vector) VALUES (${"d1"}, ${"m"}, ${Buffer.alloc(0)})`
        yield* sql`INSERT INTO queue_control (key, value) VALUES (${'quote " back \\ line\n tab\t é ☃ 𝄞'}, ${"v"})`
        yield* sql`INSERT INTO vault_audit (at, event, consumer, grant_id, detail)
          VALUES (${1}, ${"test"}, ${null}, ${null}, ${"{}"})`
      })
    )
  })

interface DemoSource {
  readonly env: Env
  readonly file: string
}
class DemoExport extends Context.Tag("test/DemoExport")<DemoExport, DemoSource>() {}

/** The demo data dir and its export, made once for the file. */
const DemoExportLive = Layer.effect(
  DemoExport,
  Effect.gen(function* () {
    const env = yield* freshEnv()
    yield* seedDemoData(AllDemoSeeders).pipe(
      Effect.provide(ServicesLive),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ ...env, KEEL_LOG_LEVEL: "warning" })))),
      Effect.orDie
    )
    yield* addUnusualRows(env)
    const file = path.join(tempDir("keel-transfer-file-"), "keel.ndjson")
    yield* ctlOk(["db", "export", file], env)
    return { env, file }
  })
)

layer(DemoExportLive, { timeout: "240 seconds", excludeTestServices: true })("ctl db export / import", (it) => {
  it.effect(
    "the demo data round-trips into an empty database: every table's rows equal, the ledger audit ok",
    () =>
      Effect.gen(function* () {
        const { env, file } = yield* DemoExport
        const tables = fileTables(file)
        // Nothing of Keel's is left out: the file holds every table the database has but the actor runtime's and
        // the full-text index (derived).
        assert.deepStrictEqual(tables.map((t) => t.table).sort(), yield* tablesIn(env))
        assert.isAtLeast(tables.find((t) => t.table === "gt_chunks")?.rows ?? 0, 1, "the ground truth demo ingested")
        assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
        const lines = fileLines(file)
        assert.include(
          lines.find((l) => l.includes('"bin/every-byte"')) ?? "",
          '"9007199254740993"',
          "past 2^53: a string"
        )

        const target = yield* freshEnv()
        const run = yield* ctlOk(["db", "import", file, "--json"], target)
        const report = JSON.parse(run.stdout) as {
          tables: Array<{ table: string; rows: number }>
          rows: number
          checks: Array<{ name: string; ok: boolean }>
        }
        assert.strictEqual(report.tables.length, tables.length)
        assert.strictEqual(
          report.rows,
          tables.reduce((n, t) => n + t.rows, 0)
        )
        assert.deepStrictEqual(
          report.checks.map((c) => [c.name, c.ok]),
          [
            ["ground truth search index", true],
            ["market ledger audit", true]
          ]
        )
        const [source, copy] = [yield* rowsOf(env, tables), yield* rowsOf(target, tables)]
        for (const table of tables) assert.deepStrictEqual(copy[table.table], source[table.table], table.table)
        const audit = yield* ctlOk(["market", "audit", "--json"], target)
        assert.isTrue((JSON.parse(audit.stdout) as { ok: boolean }).ok)
      }),
    240_000
  )

  it.effect(
    "a non-empty target is refused and left exactly as it was",
    () =>
      Effect.gen(function* () {
        const { env, file } = yield* DemoExport
        const tables = fileTables(file)
        const before = yield* rowsOf(env, tables)
        const run = yield* runCli(["db", "import", file, "--json"], env)
        assert.strictEqual(run.exitCode, 1)
        const error = (JSON.parse(run.stdout) as { error: { code: string; detail: string } }).error
        assert.strictEqual(error.code, "TARGET_NOT_EMPTY")
        assert.match(error.detail, /already holds rows \(.*gt_chunks \d+/)
        assert.deepStrictEqual(yield* rowsOf(env, tables), before)

        // One row anywhere is enough; it stays, and nothing is added.
        const target = yield* freshEnv()
        yield* ctlOk(["db", "migrate"], target)
        yield* onDatabase(
          target,
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`INSERT INTO leases (key, holder, fence, acquired_at, renewed_at, expires_at)
            VALUES ('k', 'h', 1, 1, 1, 2)`
          )
        )
        const refused = yield* runCli(["db", "import", file], target)
        assert.strictEqual(refused.exitCode, 1)
        assert.strictEqual(
          refused.stderr,
          "ctl: the database already holds rows (leases 1): an import only fills a new, empty database"
        )
        assert.deepStrictEqual(yield* allEmpty(target, tables), ["leases", "market_api_key_changes"])
      }),
    120_000
  )

  it.effect(
    "a file from other migrations, a damaged file and a ledger that does not balance are refused; nothing is imported",
    () =>
      Effect.gen(function* () {
        const { file } = yield* DemoExport
        const tables = fileTables(file)
        const lines = fileLines(file)
        const header = JSON.parse(lines[0]!) as { migrations: Record<string, Array<{ id: number }>> }
        const dir = tempDir("keel-transfer-bad-")
        const variant = (name: string, content: ReadonlyArray<string>) => {
          const variantFile = path.join(dir, name)
          fs.writeFileSync(variantFile, `${content.join("\n")}\n`)
          return variantFile
        }
        const older = {
          ...header,
          migrations: { ...header.migrations, market: header.migrations.market!.slice(0, -1) }
        }
        // The file's market migrations, one fewer in the "older" variant (ids numbered 0001, 0002, …).
        const marketCount = header.migrations.market!.length
        const ids = (n: number) => String(n).padStart(4, "0")
        const balance = lines.findIndex((l) => l.startsWith('{"table":"ledger_balances"')) + 1
        const tampered = JSON.parse(lines[balance]!) as Array<unknown>
        tampered[2] = String(BigInt(tampered[2] as number | string) + 1n)
        const cases: ReadonlyArray<readonly [string, string, RegExp]> = [
          [
            variant("older.ndjson", [JSON.stringify(older), ...lines.slice(1)]),
            "MIGRATION_MISMATCH",
            new RegExp(`market 0001–${ids(marketCount - 1)} in the file, 0001–${ids(marketCount)} here`)
          ],
          [
            variant("cut.ndjson", lines.slice(0, -1)),
            "EXPORT_FILE_INVALID",
            /line \d+: the file ends before its last line/
          ],
          [variant("text.ndjson", ["hello"]), "EXPORT_FILE_INVALID", /not a Keel export/],
          [
            variant("row.ndjson", [...lines.slice(0, balance), '["x"]', ...lines.slice(balance + 1)]),
            "EXPORT_FILE_INVALID",
            new RegExp(`line ${balance + 1}: ledger_balances: a row of 3 values was expected`)
          ],
          [
            variant("audit.ndjson", [
              ...lines.slice(0, balance),
              JSON.stringify(tampered),
              ...lines.slice(balance + 1)
            ]),
            "IMPORT_CHECK_FAILED",
            /market ledger audit: ledger INCONSISTENT: \d+ problem\(s\): the import was rolled back/
          ],
          [path.join(dir, "missing.ndjson"), "TRANSFER_FILE_UNAVAILABLE", /cannot read .*missing\.ndjson: no such file/]
        ]
        const target = yield* freshEnv()
        for (const [variantFile, code, detail] of cases) {
          const run = yield* runCli(["db", "import", variantFile, "--json"], target)
          assert.strictEqual(run.exitCode, 1, variantFile)
          const error = (JSON.parse(run.stdout) as { error: { code: string; detail: string } }).error
          assert.strictEqual(error.code, code, `${variantFile}: ${error.detail}`)
          assert.match(error.detail, detail)
          assert.deepStrictEqual(yield* allEmpty(target, tables), ["market_api_key_changes"], variantFile)
        }
      }),
    180_000
  )

  it.effect(
    "an export is refused while the actor runtime holds unprocessed messages, and leaves no file",
    () =>
      Effect.gen(function* () {
        const env = yield* freshEnv()
        yield* ctlOk(["db", "migrate"], env)
        // The columns of @effect/cluster's message table that the check reads.
        const messages = (processed: boolean) =>
          onDatabase(
            env,
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              yield* sql`CREATE TABLE IF NOT EXISTS cluster_messages (
                id BIGINT PRIMARY KEY, entity_type TEXT NOT NULL, processed BOOLEAN NOT NULL DEFAULT FALSE)`
              yield* sql`DELETE FROM cluster_messages`
              yield* sql`INSERT INTO cluster_messages (id, entity_type, processed) VALUES (1, 'Workflow/ReleaseRun', ${sql.literal(processed ? "TRUE" : "FALSE")})`
            })
          )
        yield* messages(false)
        const dir = tempDir("keel-transfer-pending-")
        const refused = yield* runCli(["db", "export", path.join(dir, "keel.ndjson"), "--json"], env)
        assert.strictEqual(refused.exitCode, 1)
        const error = (JSON.parse(refused.stdout) as { error: { code: string; detail: string } }).error
        assert.strictEqual(error.code, "ACTOR_WORK_PENDING")
        assert.match(error.detail, /holds 1 unprocessed message\(s\) \(Workflow\/ReleaseRun 1\)/)
        assert.deepStrictEqual(fs.readdirSync(dir), [])
        yield* messages(true)
        const exported = yield* ctlOk(["db", "export", path.join(dir, "keel.ndjson"), "--json"], env)
        const report = JSON.parse(exported.stdout) as { skipped: Array<{ table: string }> }
        assert.deepInclude(
          report.skipped.map((s) => s.table),
          "cluster_messages"
        )
        assert.deepStrictEqual(fs.readdirSync(dir), ["keel.ndjson"])
      }),
    120_000
  )

  it.effect(
    "stdout and stdin: ctl db export - | ctl db import -; --json with - is a usage error",
    () =>
      Effect.gen(function* () {
        const { env, file } = yield* DemoExport
        const tables = fileTables(file)
        const base = { PATH: process.env.PATH ?? "", KEEL_LOG_LEVEL: "warning" }
        const exported = yield* Effect.promise(() => runCtl(["db", "export", "-"], { ...base, ...env }))
        assert.strictEqual(exported.code, 0, exported.stderr)
        assert.match(exported.stderr, /^exported \d+ tables, [\d,]+ rows from \w+ to - /)
        const target = yield* freshEnv()
        const imported = yield* Effect.promise(() =>
          runCtl(["db", "import", "-"], { ...base, ...target }, exported.stdout)
        )
        assert.strictEqual(imported.code, 0, imported.stderr)
        assert.deepStrictEqual(yield* rowsOf(target, tables), yield* rowsOf(env, tables))
        const usage = yield* runCli(["db", "export", "-", "--json"], env)
        assert.strictEqual(usage.exitCode, 2)
        assert.match(usage.stderr, /--json prints its report on stdout, where - writes the export/)
      }),
    180_000
  )
})

describe.skipIf(postgresSkipReason !== undefined || cliOnPostgres)("ctl db export / import across engines", () => {
  // Skipped under test:pg (cliOnPostgres), where a data dir is a PostgreSQL schema: this test picks its engines.
  it.scopedLive(
    "SQLite → PostgreSQL → SQLite: every table's rows equal, the audit ok, PostgreSQL's identities past the highest id",
    () =>
      Effect.gen(function* () {
        const source = { KEEL_DATA_DIR: path.join(tempDir("keel-transfer-sqlite-"), "data") }
        yield* ctlOk(["db", "migrate"], source)
        yield* seedDemoData(AllDemoSeeders).pipe(
          Effect.provide(ServicesLive),
          Effect.withConfigProvider(
            ConfigProvider.fromMap(new Map(Object.entries({ ...source, KEEL_LOG_LEVEL: "warning" })))
          ),
          Effect.orDie
        )
        yield* addUnusualRows(source)
        const dir = tempDir("keel-transfer-files-")
        const fromSqlite = path.join(dir, "sqlite.ndjson")
        yield* ctlOk(["db", "export", fromSqlite], source)
        const tables = fileTables(fromSqlite)

        const pg = {
          KEEL_DATA_DIR: path.join(dir, "pg-data"),
          KEEL_DATABASE_URL: urlInSchema(testDatabaseUrl, yield* freshSchema)
        }
        const imported = JSON.parse((yield* ctlOk(["db", "import", fromSqlite, "--json"], pg)).stdout) as {
          engine: string
          source: { engine: string }
          identities: Array<{ table: string; column: string; next: number }>
        }
        assert.deepStrictEqual([imported.engine, imported.source.engine], ["postgresql", "sqlite"])
        const sourceRows = yield* rowsOf(source, tables)
        assert.deepStrictEqual(yield* rowsOf(pg, tables), sourceRows)
        assert.isTrue((JSON.parse((yield* ctlOk(["market", "audit", "--json"], pg)).stdout) as { ok: boolean }).ok)

        // Back to SQLite, from PostgreSQL: the same rows, and the same file line for line but for the header.
        const fromPg = path.join(dir, "pg.ndjson")
        yield* ctlOk(["db", "export", fromPg], pg)
        assert.deepStrictEqual(fileLines(fromPg).slice(1).sort(), fileLines(fromSqlite).slice(1).sort())
        const back = { KEEL_DATA_DIR: path.join(dir, "back-data") }
        yield* ctlOk(["db", "import", fromPg], back)
        assert.deepStrictEqual(yield* rowsOf(back, tables), sourceRows)
        assert.isTrue((JSON.parse((yield* ctlOk(["market", "audit", "--json"], back)).stdout) as { ok: boolean }).ok)

        // Each PostgreSQL identity hands out the id after the highest imported; a new ledger entry takes it.
        const entries = sourceRows.ledger_entries!.length
        assert.deepStrictEqual(
          imported.identities.find((i) => i.table === "ledger_entries"),
          { table: "ledger_entries", column: "id", next: entries + 1 }
        )
        for (const identity of imported.identities)
          assert.strictEqual(
            identity.next,
            sourceRows[identity.table]!.length + 1,
            `${identity.table}.${identity.column}`
          )
        const minted = yield* ctlOk(
          ["market", "coin", "mint", "--to", "agent:MUSE", "--amount", "1", "--reason", "after import", "--json"],
          pg
        )
        assert.strictEqual((JSON.parse(minted.stdout) as { entry: number }).entry, entries + 1)
        // SQLite's full-text index is rebuilt from the imported chunks.
        const indexed = yield* onDatabase(
          back,
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ n: bigint }>`SELECT count(*) AS n FROM gt_chunks_fts WHERE gt_chunks_fts MATCH 'database'`
          )
        )
        assert.isAtLeast(Number(indexed[0]!.n), 1)
      }),
    240_000
  )
})

describe("the export format and the reference schema", () => {
  it("integers past 2^53 travel as strings, bytes as base64; a value that does not fit is refused", () => {
    assert.strictEqual(encodeValue("integer", 9_007_199_254_740_991n), 9_007_199_254_740_991)
    assert.strictEqual(encodeValue("integer", 9_007_199_254_740_992n), "9007199254740992")
    assert.strictEqual(encodeValue("integer", "-9223372036854775808"), "-9223372036854775808")
    assert.strictEqual(encodeValue("bytes", Buffer.from([0, 255])), "AP8=")
    assert.strictEqual(encodeValue("text", null), null)
    assert.throws(() => encodeValue("integer", "12x"), ValueMisfit)
    assert.throws(() => encodeValue("text", Buffer.from("a")), ValueMisfit)
    assert.strictEqual(decodeValue("integer", "9007199254740993"), 9_007_199_254_740_993n)
    assert.deepStrictEqual(decodeValue("bytes", "AP8="), Buffer.from([0, 255]))
    assert.throws(() => decodeValue("bytes", "not base64!"), ValueMisfit)
    assert.throws(() => decodeValue("integer", 1.5), ValueMisfit)
  })

  it("migration ids read as ranges; differences name the domain", () => {
    assert.strictEqual(migrationIds([1, 2, 3, 5, 7, 8]), "0001–0003, 0005, 0007–0008")
    assert.strictEqual(migrationIds([]), "none")
    const here = { market: [1, 2].map((id) => ({ id, name: "x" })) }
    assert.deepStrictEqual(migrationDifferences({ market: [{ id: 1, name: "x" }] }, here), [
      "market 0001 in the file, 0001–0002 here"
    ])
  })

  it.effect("Keel's tables: parents before children, only the API-key counter seeded, the FTS index derived", () =>
    Effect.gen(function* () {
      const reference = yield* referenceSchema(AllMigrations)
      const names = reference.tables.map((t) => t.name)
      assert.isBelow(names.indexOf("ledger_entries"), names.indexOf("ledger_legs"))
      assert.deepStrictEqual(
        reference.tables.filter((t) => t.seeded.length > 0).map((t) => [t.name, t.seeded]),
        [["market_api_key_changes", ["[1,0]"]]]
      )
      assert.deepStrictEqual(reference.derived, ["gt_chunks_fts"])
      assert.notInclude(names, "keel_migrations_market")
    })
  )
})
