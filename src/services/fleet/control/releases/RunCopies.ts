import { Effect, Option } from "effect"
import type { RunRecord } from "../../../../contracts/fleet/ReleaseRuns.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { releaseKey } from "../../shared/releases/ReleaseManifest.js"
import { type BuildOutput, runKeys } from "../../shared/releases/RunRecords.js"

export interface ReclaimedCopy {
  readonly key: string
  readonly bytes: number
  /** `canonical_copy`: the same bytes are published under `releases/`; `lost_attempt`: no output names it. */
  readonly reason: "canonical_copy" | "lost_attempt"
}

export interface PruneReport {
  readonly apply: boolean
  readonly runs: number
  readonly reclaimed: ReadonlyArray<ReclaimedCopy>
  readonly bytes: number
  /** Runs left alone, by why: `active` (not finished), `no_output`. */
  readonly kept: Readonly<Record<string, number>>
}

const decode = <A>(bytes: Uint8Array): A | undefined => {
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as A
  } catch {
    return undefined
  }
}

/**
 * The control plane's half of release_store (docs/releases.md, "Pruning the control plane's copies"): build
 * outputs under `release-runs/<id>/builds/` are payload copies outside the canonical prefix. Of a finished run, an
 * attempt no `output.json` names (it lost the race, or its job was retried) goes; of a published run, the winning
 * attempt's objects go once the canonical `releases/<product>/<version>/` holds the very same bytes and its
 * `release.json` exists. Run records, output records, source archives and everything under `releases/` stay, and
 * so do the catalog's reservations; a run not finished is never touched.
 */
export class RunCopies extends Effect.Service<RunCopies>()("fleet/RunCopies", {
  effect: Effect.gen(function* () {
    const store = yield* ObjectStore

    const prune = (apply: boolean) =>
      Effect.gen(function* () {
        const heads = yield* store.list("release-runs/")
        const records = heads.filter((h) => /^release-runs\/[^/]+\/run\.json$/.test(h.key))
        const reclaimed: Array<ReclaimedCopy> = []
        const kept: Record<string, number> = {}
        const keep = (why: string) => {
          kept[why] = (kept[why] ?? 0) + 1
        }
        for (const head of records) {
          const found = yield* store.get(head.key)
          const record = Option.isSome(found) ? decode<RunRecord>(found.value.bytes) : undefined
          if (record === undefined) {
            keep("unreadable")
            continue
          }
          if (record.state !== "published" && record.state !== "failed") {
            keep("active")
            continue
          }
          const platform = (record.steps.recipe as { platform?: string } | undefined)?.platform
          const keys = runKeys(record.run_id)
          const builds = heads.filter((h) => h.key.startsWith(`release-runs/${record.run_id}/builds/`))
          if (platform === undefined || builds.length === 0) {
            keep("no_output")
            continue
          }
          const outputBytes = yield* store.get(keys.output(platform))
          const output = Option.isSome(outputBytes) ? decode<BuildOutput>(outputBytes.value.bytes) : undefined
          const named = new Set(output === undefined ? [] : [output.artifact.key, output.qualification.key])
          for (const build of builds) {
            if (!named.has(build.key)) {
              reclaimed.push({ key: build.key, bytes: build.size, reason: "lost_attempt" })
              continue
            }
            if (record.state !== "published") continue
            const { product, version } = record.inputs
            const canonicalFile = build.key.endsWith("/release.tar.gz") ? "release.tar.gz" : "qualification.json"
            const canonical = yield* store.head(releaseKey(product, version, canonicalFile))
            const marker = yield* store.head(releaseKey(product, version, "release.json"))
            if (Option.isSome(canonical) && Option.isSome(marker) && canonical.value.sha256 === build.sha256)
              reclaimed.push({ key: build.key, bytes: build.size, reason: "canonical_copy" })
          }
        }
        if (apply) for (const copy of reclaimed) yield* store.delete(copy.key)
        return {
          apply,
          runs: records.length,
          reclaimed,
          bytes: reclaimed.reduce((sum, c) => sum + c.bytes, 0),
          kept
        } satisfies PruneReport
      })

    return { prune } as const
  })
}) {}
