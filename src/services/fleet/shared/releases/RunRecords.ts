import { Effect, Option, Schema } from "effect"
import {
  ReleaseRunNotFound,
  RunId,
  type RunInputs,
  type RunRecord,
  type RunState
} from "../../../../contracts/fleet/ReleaseRuns.js"
import { sha256Hex } from "../../../platform/Digest.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { canonicalBytes, canonicalJson } from "./CanonicalJson.js"

/** Another writer updated the run record first: reload it and decide again (never overwrite blindly). */
export class RunRecordConflict extends Schema.TaggedError<RunRecordConflict>()("RunRecordConflict", {
  code: Schema.Literal("RUN_RECORD_CONFLICT"),
  run_id: Schema.String,
  detail: Schema.String
}) {}

export class RunRecordMissing extends Schema.TaggedError<RunRecordMissing>()("RunRecordMissing", {
  code: Schema.Literal("RUN_RECORD_MISSING"),
  run_id: Schema.String,
  detail: Schema.String
}) {}

/** The run id: the first 32 hex of SHA-256 over the canonical identity (product, version, channel, digests). */
export const runIdOf = (inputs: RunInputs) =>
  sha256Hex(
    canonicalJson({
      product: inputs.product,
      version: inputs.version,
      channel: inputs.channel,
      source_sha256: inputs.source.sha256,
      manifest_sha256: inputs.manifest_sha256
    })
  ).slice(0, 32)

export const runRecordKey = (runId: string) => `release-runs/${runId}/run.json`

/** A run's other objects (docs/releases.md, "Submit"): all under `release-runs/<id>/`, all create-only. */
export const runKeys = (runId: string) => ({
  /** The source archive the run builds from. */
  source: `release-runs/${runId}/source.tar.gz`,
  /** One build attempt's outputs: an attempt that lost (another finished first) leaves them unreferenced. */
  build: (platform: string, attempt: string, file: "release.tar.gz" | "qualification.json") =>
    `release-runs/${runId}/builds/${platform}/${attempt}/${file}`,
  /** The platform's output record: written once, by the first attempt that finished; it names that attempt. */
  output: (platform: string) => `release-runs/${runId}/outputs/${platform}/output.json`
})

/** What a build left (`output.json`): the coordinates the run publishes from. */
export interface BuildOutput {
  readonly schema: "keel.release-output/v1"
  readonly run_id: string
  readonly platform: string
  readonly builder: string
  readonly binary: string
  readonly artifact: { readonly key: string; readonly sha256: string; readonly size: number }
  readonly qualification: { readonly key: string; readonly sha256: string; readonly size: number }
}

/**
 * The run records (docs/releases.md): one canonical JSON document per run at `release-runs/<id>/run.json`, the
 * single source of truth of a run. Created once (create-only: a repeated submit finds the same run), then changed
 * only by compare-and-set on its exact bytes, its `generation` counting the changes.
 */
export class RunRecords extends Effect.Service<RunRecords>()("fleet/RunRecords", {
  effect: Effect.gen(function* () {
    const store = yield* ObjectStore

    const decode = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes)) as RunRecord

    const read = (runId: string) =>
      Effect.map(
        store.get(runRecordKey(runId)),
        Option.map((found) => ({ record: decode(found.bytes), sha256: found.sha256 }))
      )

    /** The record of a run named from outside: a run id names objects, so what is not one names no run (404). */
    const recordOf = (runId: string) =>
      Effect.gen(function* () {
        if (!Schema.is(RunId)(runId))
          return yield* new ReleaseRunNotFound({
            code: "RELEASE_RUN_NOT_FOUND",
            run_id: runId.slice(0, 80),
            detail: "no such release run: a run id is 32 hexadecimal digits"
          })
        const found = yield* read(runId).pipe(Effect.orDie)
        if (Option.isNone(found))
          return yield* new ReleaseRunNotFound({
            code: "RELEASE_RUN_NOT_FOUND",
            run_id: runId,
            detail: `no release run ${runId} (release-runs/${runId}/run.json)`
          })
        return found.value.record
      })

    /** The run of these inputs: created now, or the one a previous submit created (then `created` is false). */
    const open = (inputs: RunInputs, now: string, steps: RunRecord["steps"] = {}, state: RunState = "submitted") =>
      Effect.gen(function* () {
        const runId = runIdOf(inputs)
        const initial: RunRecord = {
          schema: "keel.release-run/v1",
          run_id: runId,
          generation: 0,
          state,
          inputs,
          steps,
          failure: null,
          created_at: now,
          updated_at: now
        }
        const written = yield* store.putIfAbsent(runRecordKey(runId), canonicalBytes(initial))
        if (written.created) return { record: initial, created: true }
        const existing = yield* read(runId)
        return {
          record: Option.getOrElse(
            Option.map(existing, (e) => e.record),
            () => initial
          ),
          created: false
        }
      })

    /**
     * Applies `change` to the record as it is now and writes it back only if nobody changed it meanwhile; the
     * caller's `expected` generation must still be current (else RunRecordConflict).
     */
    const update = (runId: string, expected: number, change: (record: RunRecord) => RunRecord, now: string) =>
      Effect.gen(function* () {
        const current = yield* read(runId)
        if (Option.isNone(current))
          return yield* new RunRecordMissing({ code: "RUN_RECORD_MISSING", run_id: runId, detail: `no run ${runId}` })
        if (current.value.record.generation !== expected)
          return yield* new RunRecordConflict({
            code: "RUN_RECORD_CONFLICT",
            run_id: runId,
            detail: `the run is at generation ${current.value.record.generation}, not ${expected}`
          })
        const next: RunRecord = {
          ...change(current.value.record),
          run_id: runId,
          generation: expected + 1,
          updated_at: now
        }
        const written = yield* store.putIfMatch(runRecordKey(runId), current.value.sha256, canonicalBytes(next))
        if (!written.replaced)
          return yield* new RunRecordConflict({
            code: "RUN_RECORD_CONFLICT",
            run_id: runId,
            detail: "another writer replaced the run record meanwhile"
          })
        return next
      })

    return { open, read, recordOf, update } as const
  })
}) {}
