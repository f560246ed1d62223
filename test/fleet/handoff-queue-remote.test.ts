import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import { vaultGrant } from "../support/controlplane.js"
import { HttpTest } from "../support/http.js"
import { AppConfigTest, FleetConfig, HandoffQueue, HandoffQueueRemote, JobQueue } from "../support/keel.js"
import { serverPort } from "../support/market.js"
import { root } from "../support/server.js"

// The handoff worker's queue on a target reached over ssh is the control plane's (HandoffQueueRemote, through the
// control plane's typed client): each operation against a real server, and its refusals in the one line the
// worker records. (The ssh end-to-end test needs sshd; this one runs everywhere.)

const registryFile = path.join(root, "examples", "registry.yml")
const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-queue-remote-")))

/** An owner-only grant credential file of the registry's handoff worker on forge-1, holding `actions`. */
const grantFile = (name: string, actions: Array<string>) =>
  Effect.map(vaultGrant({ consumer: "handoff-forge-1", actions, hosts: ["forge-1"] }), ({ credential }) => {
    const file = path.join(dir, name)
    fs.writeFileSync(file, JSON.stringify(credential), { mode: 0o600 })
    return file
  })

/** `use` on the remote queue, as a worker configured with this grant file reaches the test server. */
const remotely = <A, E>(grant: string, use: (queue: HandoffQueue["Type"]) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const port = yield* serverPort
    const env = { KEEL_CONTROL_PLANE_URL: `http://127.0.0.1:${port}`, KEEL_HANDOFF_GRANT_FILE: grant }
    return yield* Effect.flatMap(HandoffQueue, use).pipe(
      Effect.provide(
        HandoffQueueRemote.pipe(
          Layer.provide(FleetConfig.Default),
          Layer.provide(AppConfigTest({ dataDir: dir })),
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
          Layer.orDie
        )
      )
    )
  })

layer(HttpTest({ surfaces: ["controlplane", "vault"], env: { KEEL_REGISTRY: registryFile } }), {
  timeout: "90 seconds",
  excludeTestServices: true
})("the handoff queue through the control plane (HandoffQueueRemote)", (it) => {
  it.effect("pause, set it back, drain (cancelling the queued job) and read what the drain cancelled", () =>
    Effect.gen(function* () {
      const jobs = yield* JobQueue
      const grant = yield* grantFile("queue.grant", ["storage-queue"])
      const queued = yield* jobs.submit({ kind: "command", target: "forge-1", argv: ["true"] })

      assert.deepStrictEqual(yield* remotely(grant, (q) => q.pause("forge-1")), { set: false })
      yield* remotely(grant, (q) => q.setPause("forge-1", { set: true, paused: false }))
      assert.deepStrictEqual(yield* remotely(grant, (q) => q.pause("forge-1")), { set: true, paused: false })

      const cancelled = yield* remotely(grant, (q) => q.drain("forge-1", "tx-remote-1", 5_000))
      assert.deepStrictEqual(cancelled, [queued.id])
      const jobsNow = yield* remotely(grant, (q) => q.cancelledBy("forge-1", "tx-remote-1"))
      assert.deepStrictEqual(
        jobsNow.map((j) => [j.id, j.state, j.transaction]),
        [[queued.id, "cancelled", "tx-remote-1"]]
      )
      yield* remotely(grant, (q) => q.setPause("forge-1", { set: false }))
      assert.deepStrictEqual(yield* remotely(grant, (q) => q.pause("forge-1")), { set: false })
    })
  )

  it.effect("a refusal is the queue unavailable, with the control plane's status, code and detail", () =>
    Effect.gen(function* () {
      const grant = yield* grantFile("no-queue.grant", ["object-read"])
      const refused = yield* Effect.either(remotely(grant, (q) => q.pause("forge-1")))
      assert.isTrue(Either.isLeft(refused))
      const error = Either.getLeft(refused).pipe((o) => (o._tag === "Some" ? o.value : undefined))
      assert.strictEqual(error?._tag, "HandoffQueueUnavailable")
      assert.match(error?.detail ?? "", /^the control plane answered 403 VAULT_FORBIDDEN: \S/)

      const unknown = yield* grantFile("queue-other.grant", ["storage-queue"])
      const undeclared = yield* Effect.either(remotely(unknown, (q) => q.pause("forge-9")))
      assert.match(
        Either.isLeft(undeclared) ? undeclared.left.detail : "",
        /^the control plane answered (403 VAULT_FORBIDDEN|404 STORAGE_UNDECLARED): \S/
      )
    })
  )
})
