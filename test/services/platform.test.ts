import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, FiberRef, Layer, Option } from "effect"
import {
  AppConfig,
  AppConfigTest,
  Database,
  hotSpan,
  loadSettings,
  resolveLogFormat,
  ServicesTest,
  seedDemoData,
  TracingLive,
  withTracingFromConfig
} from "../support/keel.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("AppConfig", () => {
  it.effect("defaults: ./.keel, 127.0.0.1:8080, 1 MiB bodies, auto logs", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings.pipe(withEnv({}))
      assert.strictEqual(settings.dataDir, path.resolve(".keel"))
      assert.strictEqual(settings.databaseFile, path.resolve(".keel", "keel.db"))
      assert.strictEqual(settings.httpHost, "127.0.0.1")
      assert.strictEqual(settings.httpPort, 8080)
      assert.strictEqual(settings.bodyLimitBytes, 1024 * 1024)
      assert.strictEqual(settings.logFormat, "auto")
      assert.isTrue(Duration.equals(settings.shutdownGrace, Duration.seconds(30)))
      assert.strictEqual(settings.sqliteSynchronous, "normal")
      assert.isFalse(settings.tracing)
    })
  )

  it.effect("every setting comes from its KEEL_ variable", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings.pipe(
        withEnv({
          KEEL_DATA_DIR: "/srv/keel",
          KEEL_HTTP_HOST: "::",
          KEEL_HTTP_PORT: "9000",
          KEEL_HTTP_BODY_LIMIT: "2048",
          KEEL_SHUTDOWN_GRACE: "5 seconds",
          KEEL_LOG_FORMAT: "logfmt",
          KEEL_LOG_LEVEL: "debug",
          KEEL_DEMO_DATA: "false",
          KEEL_DATABASE_FILE: ":memory:",
          KEEL_SQLITE_SYNCHRONOUS: "full",
          KEEL_TRACING: "true"
        })
      )
      assert.strictEqual(settings.sqliteSynchronous, "full")
      assert.isTrue(settings.tracing)
      assert.strictEqual(settings.dataDir, "/srv/keel")
      assert.strictEqual(settings.databaseFile, ":memory:")
      assert.strictEqual(settings.httpHost, "::")
      assert.strictEqual(settings.httpPort, 9000)
      assert.strictEqual(settings.bodyLimitBytes, 2048)
      assert.strictEqual(settings.logFormat, "logfmt")
      assert.strictEqual(settings.logLevel, "debug")
      assert.isFalse(settings.demoData)
      assert.isTrue(Duration.equals(settings.shutdownGrace, Duration.seconds(5)))
    })
  )

  it.effect("bad values are refused with the variable's name", () =>
    Effect.gen(function* () {
      for (const env of [
        { KEEL_HTTP_PORT: "70000" },
        { KEEL_LOG_FORMAT: "xml" },
        { KEEL_HTTP_BODY_LIMIT: "-1" },
        { KEEL_SQLITE_SYNCHRONOUS: "off" }
      ]) {
        const error = yield* Effect.flip(loadSettings.pipe(withEnv(env)))
        assert.include(String(error), Object.keys(env)[0] ?? "")
      }
    })
  )

  it.effect("the server's fibers make spans only when KEEL_TRACING asks for them", () =>
    Effect.gen(function* () {
      const tracerEnabled = FiberRef.get(FiberRef.currentTracerEnabled)
      for (const tracing of [false, true]) {
        const enabled = yield* tracerEnabled.pipe(
          Effect.provide(TracingLive.pipe(Layer.provide(AppConfigTest({ tracing }))))
        )
        assert.strictEqual(enabled, tracing)
      }
    })
  )

  it.effect("every fiber the application graph forks while it is built follows KEEL_TRACING", () =>
    Effect.gen(function* () {
      for (const tracing of [false, true]) {
        const seen = yield* Deferred.make<boolean>()
        // As the cluster's entity managers and the schedules do: a fiber forked while the layer is built.
        const forksWhileBuilt = Layer.scopedDiscard(
          Effect.forkScoped(
            Effect.flatMap(FiberRef.get(FiberRef.currentTracerEnabled), (enabled) => Deferred.succeed(seen, enabled))
          )
        )
        const enabled = yield* Layer.build(withTracingFromConfig(forksWhileBuilt)).pipe(
          Effect.zipRight(Deferred.await(seen)),
          Effect.scoped,
          withEnv({ KEEL_TRACING: String(tracing) })
        )
        assert.strictEqual(enabled, tracing)
      }
    })
  )

  it.effect("a hot path's span exists only while the tracer is on, with the body's own result", () =>
    Effect.gen(function* () {
      const double = hotSpan("Unit.double")(function* (n: number) {
        const span = yield* Effect.option(Effect.currentSpan)
        return { doubled: n * 2, span: Option.map(span, (s) => s.name) }
      })
      const on = yield* double(21).pipe(Effect.withTracerEnabled(true))
      assert.deepStrictEqual(on, { doubled: 42, span: Option.some("Unit.double") })
      const off = yield* double(21).pipe(Effect.withTracerEnabled(false))
      assert.strictEqual(off.doubled, 42)
      assert.notStrictEqual(Option.getOrUndefined(off.span), "Unit.double")
    })
  )

  it("log format auto is pretty on a terminal and JSON lines otherwise", () => {
    assert.strictEqual(resolveLogFormat("auto", true), "pretty")
    assert.strictEqual(resolveLogFormat("auto", false), "json")
    assert.strictEqual(resolveLogFormat("logfmt", true), "logfmt")
  })
})

describe("Database", () => {
  it.effect("the Test layer is real SQLite in memory (PostgreSQL under test:pg) with every migration applied", () =>
    Effect.gen(function* () {
      const database = yield* Database
      yield* database.ping
      const info = yield* database.info(["platform"])
      // KEEL_TEST_DATABASE_URL (npm run test:pg) puts the test layers on PostgreSQL, a schema of their own.
      if (process.env.KEEL_TEST_DATABASE_URL === undefined) {
        assert.strictEqual(info.dialect, "sqlite")
        assert.strictEqual(info.file, ":memory:")
      } else assert.strictEqual(info.engine, "postgresql")
      assert.deepStrictEqual(
        info.migrations.map((m) => m.name),
        ["create_leases", "create_demo_seeds", "create_objects", "create_vault", "objects_key_code_point_order"]
      )
      assert.strictEqual((yield* AppConfig).databaseFile, ":memory:")
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("demo data is seeded once per domain, atomically with its marker", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE demo_things (name TEXT)`
      const seeder = {
        domain: "things",
        seed: sql`INSERT INTO demo_things VALUES ('a')`.pipe(Effect.orDie, Effect.asVoid)
      }
      assert.deepStrictEqual(yield* seedDemoData([seeder]), ["things"])
      assert.deepStrictEqual(yield* seedDemoData([seeder]), [])
      // count(*) is a number on SQLite and text on PostgreSQL (docs/database.md, "Integers").
      const rows = yield* sql<{ n: number | string }>`SELECT count(*) AS n FROM demo_things`
      assert.strictEqual(Number(rows[0]?.n), 1)
      const failing = { domain: "broken", seed: Effect.die(new Error("seed failed")) }
      yield* Effect.exit(seedDemoData([failing]))
      const marker = yield* sql`SELECT domain FROM demo_seeds WHERE domain = 'broken'`
      assert.strictEqual(marker.length, 0)
    }).pipe(Effect.provide(ServicesTest()))
  )
})
