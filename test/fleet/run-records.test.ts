import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { ObjectStore, RunRecord, RunRecords, runIdOf, runRecordKey, ServicesTest } from "../support/keel.js"

// Issue 19: a release run's record — the same inputs are the same run (a repeated submit finds it), and every
// change is compare-and-set, so two writers never both win.

const inputs = {
  product: "keel",
  version: "1.2.3",
  channel: "stable",
  source: { revision: "a".repeat(40), tree: "b".repeat(40), sha256: "c".repeat(64), size: 10 },
  manifest_sha256: "d".repeat(64)
}
const now = "2026-11-24T00:00:00.000Z"

describe("run records", () => {
  it("the run id derives from product, version, channel and the two digests only", () => {
    assert.match(runIdOf(inputs), /^[0-9a-f]{32}$/)
    assert.strictEqual(runIdOf(inputs), runIdOf({ ...inputs, source: { ...inputs.source, size: 99 } }))
    for (const other of [
      { ...inputs, version: "1.2.4" },
      { ...inputs, channel: "candidate" },
      { ...inputs, manifest_sha256: "e".repeat(64) },
      { ...inputs, source: { ...inputs.source, sha256: "f".repeat(64) } }
    ])
      assert.notStrictEqual(runIdOf(other), runIdOf(inputs))
  })

  it.effect("open is create-only: a repeated submit finds the same run, as it was left", () =>
    Effect.gen(function* () {
      const runs = yield* RunRecords
      const first = yield* runs.open(inputs, now)
      assert.isTrue(first.created)
      assert.deepInclude(first.record, { generation: 0, state: "submitted" })
      yield* runs.update(
        first.record.run_id,
        0,
        (r) => ({ ...r, state: "building", steps: { source_published: { status: "done" } } }),
        now
      )
      const again = yield* runs.open(inputs, "2026-12-01T00:00:00.000Z")
      assert.isFalse(again.created)
      assert.deepInclude(again.record, { generation: 1, state: "building", created_at: now })
      assert.isTrue(Option.isSome(yield* (yield* ObjectStore).head(runRecordKey(first.record.run_id))))
      // The record as stored is what the contract describes (GET /api/workflows/release-run/<id> answers it as it is).
      const stored = yield* runs.read(first.record.run_id)
      assert.isTrue(Option.isSome(stored))
      if (Option.isSome(stored))
        assert.doesNotThrow(() =>
          Schema.decodeUnknownSync(RunRecord, { onExcessProperty: "error" })(stored.value.record)
        )
    }).pipe(Effect.provide(ServicesTest()))
  )

  it.effect("updates are compare-and-set: a stale generation and a lost race are conflicts, one writer wins", () =>
    Effect.gen(function* () {
      const runs = yield* RunRecords
      const { record } = yield* runs.open(inputs, now)
      const stale = yield* Effect.flip(runs.update(record.run_id, 5, (r) => r, now))
      assert.strictEqual(stale.code, "RUN_RECORD_CONFLICT")
      const racers = yield* Effect.all(
        ["publishing", "failed"].map((state) =>
          Effect.either(runs.update(record.run_id, 0, (r) => ({ ...r, state: state as "publishing" | "failed" }), now))
        ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(racers.filter((r) => r._tag === "Right").length, 1)
      const final = Option.getOrThrow(yield* runs.read(record.run_id)).record
      assert.strictEqual(final.generation, 1)
      const missing = yield* Effect.flip(runs.update("0".repeat(32), 0, (r) => r, now))
      assert.strictEqual(missing.code, "RUN_RECORD_MISSING")
    }).pipe(Effect.provide(ServicesTest()))
  )
})
