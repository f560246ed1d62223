import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { AppConfigTest, SqlLive } from "../support/keel.js"

const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)

/**
 * The data dir's database opened as the server opens it, one write made (so -wal and -shm exist), then `whileOpen`
 * (SQLite removes -wal and -shm when the last connection closes).
 */
const openAndWrite = (dataDir: string, logs: Array<string> = [], whileOpen: () => void = () => {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS probe (secret TEXT)`
    yield* sql`INSERT INTO probe (secret) VALUES ('hunter2')`
    whileOpen()
  }).pipe(
    Effect.provide(
      SqlLive.pipe(
        Layer.provideMerge(AppConfigTest({ dataDir, databaseFile: path.join(dataDir, "keel.db") })),
        Layer.provide(
          Logger.replace(
            Logger.defaultLogger,
            Logger.make(({ message }) => logs.push(String(message)))
          )
        )
      )
    )
  )

describe("the data dir and its database are owner-only", () => {
  it.effect(
    "a fresh data dir is 0700 and keel.db, its -wal and -shm are 0600, whatever the process umask",
    () =>
      Effect.gen(function* () {
        const parent = fs.mkdtempSync(path.join(os.tmpdir(), "keel-private-"))
        const dataDir = path.join(parent, "data")
        const umask = process.umask(0o022)
        try {
          yield* openAndWrite(dataDir, [], () => {
            assert.strictEqual(modeOf(dataDir), "700")
            for (const name of ["keel.db", "keel.db-wal", "keel.db-shm"]) {
              assert.isTrue(fs.existsSync(path.join(dataDir, name)), `${name} exists`)
              assert.strictEqual(modeOf(path.join(dataDir, name)), "600", name)
            }
          })
        } finally {
          process.umask(umask)
          fs.rmSync(parent, { recursive: true, force: true })
        }
      }),
    60_000
  )

  it.effect(
    "an existing data dir and database that others can read are tightened, with a warning",
    () =>
      Effect.gen(function* () {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-private-"))
        try {
          // As a release that made them 0755/0644 left them: a database whose -wal and -shm are still there.
          fs.chmodSync(dataDir, 0o755)
          for (const name of ["keel.db", "keel.db-wal", "keel.db-shm"])
            fs.writeFileSync(path.join(dataDir, name), "", { mode: 0o644 })
          const logs: Array<string> = []
          yield* openAndWrite(dataDir, logs, () => {
            assert.strictEqual(modeOf(dataDir), "700")
            for (const name of ["keel.db", "keel.db-wal", "keel.db-shm"])
              assert.strictEqual(modeOf(path.join(dataDir, name)), "600", name)
          })
          assert.isTrue(
            logs.some((line) => line.includes(dataDir) && line.includes("now 700")),
            `a warning names the data dir: ${logs.join(" | ")}`
          )
          assert.isTrue(
            logs.some((line) => line.includes("keel.db") && line.includes("now 600")),
            `a warning names the database: ${logs.join(" | ")}`
          )
        } finally {
          fs.rmSync(dataDir, { recursive: true, force: true })
        }
      }),
    60_000
  )
})
