import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import { AllMigrations } from "../../src/layers/Migrations.js"
import { sqliteMemory } from "../support/keel.js"

/**
 * A landed migration never changes (docs/database.md, "Migrations"): not one byte of the SQL it sends to SQLite.
 * Every migration of every domain runs on a fresh in-memory SQLite, in the Migrator's order, and the statement
 * texts it sends (as compiled, read from the `db.query.text` attribute of its `sql.execute` spans) must equal
 * its section of the committed sqlite-migrations.sql. A new migration has no section yet: run this file with
 * KEEL_APPEND_SQLITE_MIGRATIONS=1 once to append the missing sections (existing ones are never rewritten).
 */
const SNAPSHOT = fileURLToPath(new URL("./sqlite-migrations.sql", import.meta.url))
const HEADER = "-- migration: "

/** A tracer that records every statement text a client compiles, and traces as the tracer it wraps does. */
const recording = (inner: Tracer.Tracer, texts: Array<string>) =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = inner.span(name, parent, context, links, startTime, kind, options)
      return Object.assign(Object.create(span) as Tracer.Span, {
        attribute: (key: string, value: unknown) => {
          if (key === "db.query.text" && typeof value === "string") texts.push(value)
          span.attribute(key, value)
        }
      })
    },
    context: (f, fiber) => inner.context(f, fiber)
  })

const byId = ([a]: [string, unknown], [b]: [string, unknown]) => Number.parseInt(a, 10) - Number.parseInt(b, 10)

/** `domain/key` → the statements the migration sent, each followed by `;`, in the order sent. */
const sentStatements = Effect.gen(function* () {
  const sections = new Map<string, string>()
  const inner = yield* Effect.tracer
  for (const set of AllMigrations) {
    for (const [key, migration] of Object.entries(set.migrations).sort(byId)) {
      const texts: Array<string> = []
      yield* migration.pipe(Effect.withTracer(recording(inner, texts)))
      sections.set(`${set.domain}/${key}`, texts.map((text) => `${text};\n`).join(""))
    }
  }
  return sections
}).pipe(Effect.provide(sqliteMemory))

const committedSections = () => {
  const sections = new Map<string, string>()
  if (!fs.existsSync(SNAPSHOT)) return sections
  const parts = fs
    .readFileSync(SNAPSHOT, "utf8")
    .split(new RegExp(`^${HEADER}`, "m"))
    .slice(1)
  for (const part of parts) {
    const newline = part.indexOf("\n")
    sections.set(part.slice(0, newline), part.slice(newline + 1))
  }
  return sections
}

describe("SQLite migrations", () => {
  it.effect("send exactly the committed SQL, migration by migration", () =>
    Effect.gen(function* () {
      const sent = yield* sentStatements
      const committed = committedSections()
      const missing = [...sent.keys()].filter((key) => !committed.has(key))
      if (missing.length > 0 && process.env.KEEL_APPEND_SQLITE_MIGRATIONS === "1")
        for (const key of missing) fs.appendFileSync(SNAPSHOT, `${HEADER}${key}\n${sent.get(key)}`)
      else assert.deepStrictEqual(missing, [], "new migrations: append them with KEEL_APPEND_SQLITE_MIGRATIONS=1")
      for (const [key, text] of committed) {
        assert.isTrue(sent.has(key), `${key} was landed and is gone`)
        assert.strictEqual(sent.get(key), text, `${key} was landed: its SQLite text must not change (add a migration)`)
      }
    })
  )
})
