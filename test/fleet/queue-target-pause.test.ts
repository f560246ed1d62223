import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { JobQueue, ServicesTest } from "../support/keel.js"

// Issue 18: a storage handoff pauses one target's queue — captured and restored exactly, never another
// target's —, drains it with a bounded wait, and cancels what was queued there with a typed reason.

describe("a target's own queue pause", () => {
  it.effect("pauses claims on that target only, and is restored exactly as it was (absent, false or true)", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const onA = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const onB = yield* queue.submit({ kind: "command", target: "forge-2", argv: ["true"] })
      const before = yield* queue.targetPause("forge-1")
      assert.deepStrictEqual(before, { set: false })
      yield* queue.setTargetPause("forge-1", { set: true, paused: true })
      const claimed = yield* queue.claim("worker", 60_000)
      assert.strictEqual(Option.getOrThrow(claimed).id, onB.id, "the other target's job runs")
      assert.isTrue(Option.isNone(yield* queue.claim("worker", 60_000)), "forge-1 gives out nothing")
      assert.isFalse((yield* queue.stats).paused, "the global pause is untouched")
      yield* queue.setTargetPause("forge-1", before)
      assert.deepStrictEqual(yield* queue.targetPause("forge-1"), { set: false })
      assert.strictEqual(Option.getOrThrow(yield* queue.claim("worker", 60_000)).id, onA.id)

      yield* queue.setTargetPause("forge-2", { set: true, paused: false })
      const explicit = yield* queue.targetPause("forge-2")
      yield* queue.setTargetPause("forge-2", { set: true, paused: true })
      yield* queue.setTargetPause("forge-2", explicit)
      assert.deepStrictEqual(yield* queue.targetPause("forge-2"), { set: true, paused: false })
    }).pipe(Effect.provide(ServicesTest()))
  )
})

describe("draining a target", () => {
  it.live("waits for its running jobs, at most the bound: then QueueDrainTimedOut names them", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["sleep", "9"] })
      yield* queue.claim("worker", 60_000)
      const timedOut = yield* Effect.flip(queue.drainTarget("forge-1", 300, 50))
      assert.deepInclude(timedOut, { _tag: "QueueDrainTimedOut", target: "forge-1", running: [job.id] })
      assert.deepStrictEqual(yield* queue.targetPause("forge-1"), { set: true, paused: true }, "the caller restores")
      yield* queue.complete(job.id, "worker", { exitCode: 0 })
      yield* queue.drainTarget("forge-1", 300, 50)
    }).pipe(Effect.provide(ServicesTest()))
  )
})

describe("cancelling what was queued on a target", () => {
  it.effect("records handoff_cancelled and the transaction on each job; other targets' jobs stay queued", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const first = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const second = yield* queue.submit({ kind: "command", target: "forge-1", argv: ["true"] })
      const other = yield* queue.submit({ kind: "command", target: "forge-2", argv: ["true"] })
      const cancelled = yield* queue.cancelQueuedOn("forge-1", "handoff_cancelled", "txn-42")
      assert.sameMembers([...cancelled], [first.id, second.id])
      const listed = yield* queue.cancelledBy("txn-42")
      assert.deepStrictEqual(
        listed.map((j) => [j.id, j.state, j.cancelReason, j.cancelRef]),
        [
          [first.id, "cancelled", "handoff_cancelled", "txn-42"],
          [second.id, "cancelled", "handoff_cancelled", "txn-42"]
        ]
      )
      assert.strictEqual((yield* queue.get(other.id)).state, "queued")
    }).pipe(Effect.provide(ServicesTest()))
  )
})
