import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { LeaseKeeper } from "../support/keel.js"
import { leaseKeeperRuntime } from "../support/lease-keeper.js"

/** The production wiring (single runner, SQL message storage) on a real SQLite file. */
const runtimeOn = (file: string) => leaseKeeperRuntime(SqliteClient.layer({ filename: file }), { databaseFile: file })

describe("LeaseKeeper entity on the single SQL runner", () => {
  it.live(
    "serializes lease requests per key through sharding, and its state survives a restart",
    () =>
      Effect.gen(function* () {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-actor-"))
        const file = path.join(dir, "keel.db")

        const first = yield* Effect.gen(function* () {
          const client = yield* LeaseKeeper.client
          const gate = client("janitor:web-1")
          const results = yield* Effect.all(
            ["run-a", "run-b", "run-c"].map((holder) => Effect.exit(gate.Acquire({ holder, ttlMillis: 60_000 }))),
            { concurrency: "unbounded" }
          )
          return results
        }).pipe(Effect.provide(runtimeOn(file)))

        // Exactly one of three concurrent claimants wins; the others learn who did.
        const winners = first.filter(Exit.isSuccess)
        assert.strictEqual(winners.length, 1)
        const winner = winners[0]!.value
        for (const exit of first.filter(Exit.isFailure)) {
          const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
          assert.strictEqual(error?._tag, "LeaseHeld")
          if (error?._tag === "LeaseHeld") assert.strictEqual(error.holder, winner.holder)
        }

        // A new runtime on the same file: the actor is rebuilt and finds the lease in SQL.
        yield* Effect.gen(function* () {
          const client = yield* LeaseKeeper.client
          const gate = client("janitor:web-1")
          const status = yield* gate.Status()
          assert.strictEqual(status?.holder, winner.holder)
          assert.strictEqual(status?.fence, 1)
          const released = yield* gate.Release({ holder: winner.holder })
          assert.strictEqual(released.fence, 1)
          const next = yield* gate.Acquire({ holder: "run-d", ttlMillis: 60_000 })
          assert.strictEqual(next.fence, 2)
          assert.isNull(yield* client("janitor:web-2").Status())
        }).pipe(Effect.provide(runtimeOn(file)))

        fs.rmSync(dir, { recursive: true, force: true })
      }),
    30_000
  )
})
