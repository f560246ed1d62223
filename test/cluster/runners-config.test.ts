import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  EntityId,
  MessageStorage,
  RunnerHealth,
  RunnerStorage,
  Runners,
  Sharding,
  ShardingConfig
} from "@effect/cluster"
import { assert, beforeAll, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Option, TestClock } from "effect"
import {
  type ClusterSettings,
  clusterSettings,
  isPrivateAddress,
  parseHostPort,
  planRunners,
  runnerTlsState
} from "../../src/services/platform/ClusterConfig.js"
import { shardOf } from "../../src/services/platform/ClusterStatus.js"
import { makeCa, type RunnerCertificate, runnerTlsEnv } from "../support/runner-tls.js"

const settingsFrom = (env: Record<string, string>) =>
  Effect.withConfigProvider(clusterSettings, ConfigProvider.fromMap(new Map(Object.entries(env))))

const fit = { engine: "pg", sharedVaultKey: true, objectStore: "sql" } as const

const refusal = (exit: Exit.Exit<unknown, { readonly code: string; readonly detail: string }>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.code : "started"

describe("runners mode's settings and refusals (docs/cluster.md)", () => {
  it.effect("single is the default; runners mode reads Keel's own names", () =>
    Effect.gen(function* () {
      const defaults = yield* settingsFrom({})
      assert.strictEqual(defaults.mode, "single")
      assert.strictEqual(defaults.shards, 300)
      const set = yield* settingsFrom({
        KEEL_CLUSTER_MODE: "runners",
        KEEL_RUNNER_ADDRESS: "10.0.0.5:7400",
        KEEL_RUNNER_LISTEN: "0.0.0.0:7400",
        KEEL_RUNNER_WEIGHT: "2",
        KEEL_RUNNER_SHARD_GROUPS: "default,local-web-1",
        KEEL_CLUSTER_SHARDS: "60"
      })
      assert.deepStrictEqual(
        [set.mode, set.weight, set.shards, set.shardGroups, Option.getOrNull(set.runnerListen)],
        ["runners", 2, 60, ["default", "local-web-1"], "0.0.0.0:7400"]
      )
    })
  )

  it.effect("refused on SQLite, without a shared vault key, or with this machine's own object store", () =>
    Effect.gen(function* () {
      const settings = yield* settingsFrom({ KEEL_CLUSTER_MODE: "runners", KEEL_RUNNER_ADDRESS: "127.0.0.1:7400" })
      const plan = (facts: Parameters<typeof planRunners>[1]) => Effect.exit(planRunners(settings, facts))
      assert.strictEqual(refusal(yield* plan({ ...fit, engine: "sqlite" })), "RUNNERS_NEED_POSTGRES")
      assert.strictEqual(refusal(yield* plan({ ...fit, sharedVaultKey: false })), "RUNNERS_NEED_VAULT_KEY")
      assert.strictEqual(refusal(yield* plan({ ...fit, objectStore: "fs" })), "RUNNERS_NEED_SHARED_OBJECTS")
      const planned = yield* planRunners(settings, fit)
      assert.deepStrictEqual(planned, {
        address: { host: "127.0.0.1", port: 7400 },
        listen: { host: "127.0.0.1", port: 7400 },
        tls: Option.none()
      })
    })
  )

  it.effect("the runner port binds a private address only, unless a public one is allowed on purpose", () =>
    Effect.gen(function* () {
      const planWith = (env: Record<string, string>) =>
        Effect.flatMap(settingsFrom({ KEEL_CLUSTER_MODE: "runners", ...env }), (settings: ClusterSettings) =>
          Effect.exit(planRunners(settings, fit))
        )
      for (const listen of ["0.0.0.0:7400", "[::]:7400", "8.8.8.8:7400", "[2001:db8::1]:7400"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: "10.0.0.5:7400", KEEL_RUNNER_LISTEN: listen })),
          "RUNNER_ADDRESS_PUBLIC",
          listen
        )
      for (const listen of ["127.0.0.1:7400", "10.1.2.3:7400", "172.20.0.1:7400", "192.168.1.9:7400", "[::1]:7400"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: "10.0.0.5:7400", KEEL_RUNNER_LISTEN: listen })),
          "started",
          listen
        )
      assert.strictEqual(
        refusal(
          yield* planWith({
            KEEL_RUNNER_ADDRESS: "203.0.113.7:7400",
            KEEL_RUNNER_LISTEN: "0.0.0.0:7400",
            KEEL_RUNNER_ALLOW_PUBLIC: "true"
          })
        ),
        "started"
      )
      for (const address of ["", "host", "host:0", "host:70000", "a:b:c"])
        assert.strictEqual(
          refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: address })),
          "RUNNER_ADDRESS_INVALID",
          address
        )
      assert.strictEqual(refusal(yield* planWith({})), "RUNNER_ADDRESS_INVALID")
    })
  )

  it("address helpers: host:port forms and private ranges", () => {
    assert.deepStrictEqual(parseHostPort("[fd00::2]:7400"), { host: "fd00::2", port: 7400 })
    assert.deepStrictEqual(parseHostPort("runner-1.internal:7400"), { host: "runner-1.internal", port: 7400 })
    assert.isTrue(isPrivateAddress("100.64.0.1"))
    assert.isTrue(isPrivateAddress("fe80::1"))
    assert.isFalse(isPrivateAddress("1.1.1.1"))
    assert.isFalse(isPrivateAddress("not-an-ip"))
  })
})

describe("the runner port's TLS settings and refusals (docs/cluster.md, Security of the runner port)", () => {
  // A CA and its runner certificates, another CA (what the runners must refuse), made with openssl as the docs say.
  let dir = ""
  let ca = { cert: "", key: "" }
  let good: RunnerCertificate = { cert: "", key: "" }
  let other: RunnerCertificate = { cert: "", key: "" }
  let foreign: RunnerCertificate = { cert: "", key: "" }
  let serverOnly: RunnerCertificate = { cert: "", key: "" }
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runner-tls-"))
    const shared = makeCa(dir, "keel-runners-ca")
    ca = shared
    good = shared.issue("runner-a")
    other = shared.issue("runner-b")
    serverOnly = shared.issue("runner-s", { extendedKeyUsage: "serverAuth" })
    foreign = makeCa(path.join(dir, "elsewhere"), "another-ca").issue("intruder")
  }, 60_000)

  const planWith = (env: Record<string, string>) =>
    Effect.flatMap(
      settingsFrom({ KEEL_CLUSTER_MODE: "runners", KEEL_RUNNER_ADDRESS: "127.0.0.1:7400", ...env }),
      (settings: ClusterSettings) => Effect.exit(planRunners(settings, fit))
    )
  const detail = (exit: Exit.Exit<unknown, { readonly code: string; readonly detail: string }>) =>
    Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.detail : ""
  // Certificates are valid from when openssl made them: the test clock starts at 1970 unless told the time.
  const now = Effect.suspend(() => TestClock.setTime(Date.now()))

  it.effect("all three or none: a partial set is refused, naming what is missing", () =>
    Effect.gen(function* () {
      yield* now
      const full = runnerTlsEnv(ca.cert, good)
      for (const left of ["KEEL_RUNNER_TLS_CA", "KEEL_RUNNER_TLS_CERT", "KEEL_RUNNER_TLS_KEY"] as const) {
        const partial: Record<string, string> = { ...full }
        delete partial[left]
        const exit = yield* planWith(partial)
        assert.strictEqual(refusal(exit), "RUNNER_TLS_INVALID", left)
        assert.include(detail(exit), `${left} missing`)
      }
      const onlyCa = yield* planWith({ KEEL_RUNNER_TLS_CA: ca.cert })
      assert.strictEqual(refusal(onlyCa), "RUNNER_TLS_INVALID")
      assert.include(detail(onlyCa), "KEEL_RUNNER_TLS_CERT and KEEL_RUNNER_TLS_KEY missing")
      assert.deepStrictEqual(
        [
          runnerTlsState(yield* settingsFrom({})),
          runnerTlsState(yield* settingsFrom({ KEEL_RUNNER_TLS_KEY: good.key })),
          runnerTlsState(yield* settingsFrom(full))
        ],
        ["off", "incomplete", "on"]
      )
    })
  )

  it.effect("a good set plans TLS, and lets the port bind a public address without KEEL_RUNNER_ALLOW_PUBLIC", () =>
    Effect.gen(function* () {
      yield* now
      const settings = yield* settingsFrom({
        KEEL_CLUSTER_MODE: "runners",
        KEEL_RUNNER_ADDRESS: "203.0.113.7:7400",
        KEEL_RUNNER_LISTEN: "0.0.0.0:7400",
        ...runnerTlsEnv(ca.cert, good)
      })
      const plan = yield* planRunners(settings, fit)
      assert.isTrue(Option.isSome(plan.tls))
      const tls = Option.getOrThrow(plan.tls)
      assert.strictEqual(tls.subject, "CN=runner-a")
      assert.match(tls.fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/)
      assert.isTrue(tls.expires.getTime() > Date.now())
      // The key is redacted wherever the plan is printed.
      const keyBody = fs.readFileSync(good.key, "utf8").split("\n")[1]!
      assert.notInclude(JSON.stringify(plan), keyBody)
      assert.notInclude(String(tls.key), keyBody)
      // Without TLS the same public address stays refused.
      assert.strictEqual(
        refusal(yield* planWith({ KEEL_RUNNER_ADDRESS: "203.0.113.7:7400", KEEL_RUNNER_LISTEN: "0.0.0.0:7400" })),
        "RUNNER_ADDRESS_PUBLIC"
      )
    })
  )

  it.effect(
    "unreadable files, a certificate of another CA, a key not its certificate's: refused, no key in the text",
    () =>
      Effect.gen(function* () {
        yield* now
        const keyBodies = [good.key, other.key, foreign.key].map(
          (file) => fs.readFileSync(file, "utf8").split("\n")[1]!
        )
        const cases: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
          ["missing CA file", runnerTlsEnv(path.join(dir, "nope.crt"), good), "cannot be read: ENOENT"],
          [
            "missing key file",
            { ...runnerTlsEnv(ca.cert, good), KEEL_RUNNER_TLS_KEY: path.join(dir, "nope.key") },
            "KEEL_RUNNER_TLS_KEY"
          ],
          ["a CA file with no certificate", runnerTlsEnv(good.key, good), "holds no PEM certificate"],
          ["a runner certificate as the CA", runnerTlsEnv(other.cert, good), "not a CA certificate"],
          [
            "a certificate of another CA",
            runnerTlsEnv(ca.cert, foreign),
            "is not signed by a CA of KEEL_RUNNER_TLS_CA"
          ],
          ["a certificate for serving only", runnerTlsEnv(ca.cert, serverOnly), "serverAuth and clientAuth"],
          [
            "another runner's key",
            { ...runnerTlsEnv(ca.cert, good), KEEL_RUNNER_TLS_KEY: other.key },
            "is not the key of"
          ],
          ["the CA's key", { ...runnerTlsEnv(ca.cert, good), KEEL_RUNNER_TLS_KEY: ca.key }, "is not the key of"],
          [
            "a certificate as the key",
            { ...runnerTlsEnv(ca.cert, good), KEEL_RUNNER_TLS_KEY: good.cert },
            "not an unencrypted PEM private key"
          ]
        ]
        for (const [what, env, expected] of cases) {
          const exit = yield* planWith(env)
          assert.strictEqual(refusal(exit), "RUNNER_TLS_INVALID", what)
          assert.include(detail(exit), expected, `${what}: ${detail(exit)}`)
          for (const body of keyBodies) assert.notInclude(detail(exit), body, what)
        }
      })
  )

  it.effect("a certificate not valid now is refused", () =>
    Effect.gen(function* () {
      // The test clock at 1970: before the certificate's validity.
      const exit = yield* planWith(runnerTlsEnv(ca.cert, good))
      assert.strictEqual(refusal(exit), "RUNNER_TLS_INVALID")
      assert.match(detail(exit), /is valid from .* to .*, not now/)
    })
  )
})

describe("the shard of an actor, as ctl cluster status computes it", () => {
  it.effect("agrees with @effect/cluster's Sharding for tickers and lease keys, at 300 and at 30 shards", () =>
    Effect.gen(function* () {
      for (const shards of [300, 30]) {
        const sharding = yield* Sharding.Sharding.pipe(
          Effect.provide(
            Sharding.layer.pipe(
              Layer.provideMerge(Runners.layerNoop),
              Layer.provideMerge(MessageStorage.layerMemory),
              Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
              Layer.provide(ShardingConfig.layer({ shardsPerGroup: shards }))
            )
          )
        )
        for (const id of ["RUNA", "SAGE", "janitor:web-1", "storage:host-7", "x", "ÜNICODE-✓", ""]) {
          assert.strictEqual(
            shardOf(id, shards),
            sharding.getShardId(EntityId.make(id), "default").id,
            `${id} at ${shards}`
          )
        }
      }
    }).pipe(Effect.scoped)
  )
})
