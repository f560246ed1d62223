import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeStream } from "@effect/platform-node"
import { Clock, Duration, Effect, Either, Option, Schema, Stream } from "effect"
import type { RunInputs, RunRecord } from "../../../../contracts/fleet/ReleaseRuns.js"
import { ObjectStoreError } from "../../../../contracts/shared/ObjectErrors.js"
import { fileDigest, sha256Hex } from "../../../platform/Digest.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { FleetConfig } from "../../shared/FleetConfig.js"
import { JobQueue } from "../../shared/jobs/JobQueue.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { releaseKey } from "../../shared/releases/ReleaseManifest.js"
import { type BuildOutput, RunRecordConflict, RunRecords, runIdOf, runKeys } from "../../shared/releases/RunRecords.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"
import type { BuildAnswer } from "./ReleaseBuilder.js"
import { ReleaseCatalog } from "./ReleaseCatalog.js"
import { PublicationConflict, type PublicationStep, ReleasePublisher } from "./ReleasePublisher.js"
import { parseRecipe, RECIPE_FILE, type ReleaseRecipe } from "./ReleaseRecipe.js"
import { archiveSource, checkSourceTop, commitTime, committedFile } from "./SourceArchive.js"

/** The submit cannot start: a bad version or channel, no recipe, no builder for its platform. Nothing was written. */
export class SubmitRefused extends Schema.TaggedError<SubmitRefused>()("SubmitRefused", {
  code: Schema.Literal("SUBMIT_REFUSED"),
  detail: Schema.String
}) {}

/**
 * The recipe committed at `revision` and its bytes' digest: none when the tree has no `file`, a Left saying why
 * its text is not a recipe. Each caller words its own refusal (a submit's, the tag adapter's).
 */
export const recipeAt = (source: string, revision: string, file: string) =>
  Effect.map(
    committedFile(source, revision, file),
    Option.map((text) =>
      Either.map(parseRecipe(text), (recipe): { readonly recipe: ReleaseRecipe; readonly sha256: string } => ({
        recipe,
        sha256: sha256Hex(text)
      }))
    )
  )

export const VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/
export const CHANNEL_PATTERN = /^[a-z][a-z0-9-]{0,31}$/

export interface SubmitRequest {
  readonly source: string
  readonly version: string
  readonly channel: string
  /** How long this call waits for the build job before it answers the run as it stands (`building`). */
  readonly waitMillis: number
  /** A pause after each publication object (to watch a run step by step), 0 for none. */
  readonly stepPauseMillis?: number
  readonly onProgress?: (event: RunProgress) => Effect.Effect<void>
  /** `here` (default): this call drives the run; `elsewhere`: only record it (the server's workflow drives it). */
  readonly drive?: "here" | "elsewhere"
  /** The recipe's path in the committed tree (default `keel-release.json`; the tag adapter names its platforms'). */
  readonly recipeFile?: string
  /** Recorded in the run (`steps.tag`) when the tag adapter submits: a candidate's run is no completion evidence. */
  readonly tag?: { readonly name: string; readonly kind: "stable" | "candidate" }
}

export type RunProgress =
  | { readonly kind: "state"; readonly record: RunRecord }
  | { readonly kind: "build"; readonly job: string; readonly state: string; readonly lines: number }
  | { readonly kind: "published"; readonly step: PublicationStep }

/** What a submit answers: the run as it stands, and whether this call created it or found it. */
export interface SubmitAnswer {
  readonly run_id: string
  readonly created: boolean
  readonly record: RunRecord
}

interface BuildStep {
  readonly job: string
  readonly key: string
  readonly target: string
}

const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

const fileStream = (file: string) =>
  NodeStream.fromReadable<Error, Uint8Array>(
    () => fs.createReadStream(file),
    (error) => error as Error
  )

/**
 * A release run (docs/releases.md, "Submit"): `submit` archives the committed source, reserves the version for its
 * revision, records the submission, publishes the source object and opens the run record — then `advance` drives
 * the run from its record: queue the build (one idempotent job on a builder of the recipe's platform), read the
 * build's output coordinates, publish in order and record the catalog entry. Every step is decided from the record
 * and is idempotent, so a run stopped anywhere (a killed process) resumes where it stood when submitted again; a
 * platform output that exists is published, never rebuilt.
 */
export class ReleaseRun extends Effect.Service<ReleaseRun>()("fleet/ReleaseRun", {
  effect: Effect.gen(function* () {
    const store = yield* ObjectStore
    const catalog = yield* ReleaseCatalog
    const runs = yield* RunRecords
    const publisher = yield* ReleasePublisher
    const authority = yield* ReleaseAuthority
    const queue = yield* JobQueue
    const registry = yield* FleetRegistry
    const { remoteCtl } = yield* FleetConfig
    const refused = (detail: string) => new SubmitRefused({ code: "SUBMIT_REFUSED", detail })

    const spool = Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "keel-release-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )

    /** The recipe committed at `revision` and its bytes' digest, or the submit's refusal. */
    const recipeOrRefused = (source: string, revision: string, file: string) =>
      Effect.gen(function* () {
        const read = yield* recipeAt(source, revision, file)
        if (Option.isNone(read))
          return yield* refused(`${source} has no committed ${file} (docs/releases.md, "The recipe")`)
        if (Either.isLeft(read.value)) return yield* refused(read.value.left)
        return read.value.right
      })

    /**
     * The builder: the first registry target whose `release_platform` is the recipe's; and every build secret the
     * recipe names must be one `settings.agent.skarbiec.secret_fields` allows.
     */
    const builderFor = (platform: string, secrets: Readonly<Record<string, string>>) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true }).pipe(Effect.mapError((e) => refused(e.detail)))
        const allowed = new Set(snapshot.registry.settings.agent.skarbiec.secret_fields)
        const denied = Object.values(secrets).filter((reference) => !allowed.has(reference))
        if (denied.length > 0)
          return yield* refused(
            `the recipe's secret ${denied.join(", ")} ${denied.length === 1 ? "is" : "are"} not in settings.agent.skarbiec.secret_fields`
          )
        const builder = snapshot.registry.targets.find((t) => t.release_platform === platform)
        if (builder === undefined)
          return yield* refused(`no registry target declares release_platform ${platform}: nothing can build it`)
        return builder.name
      })

    const update = (record: RunRecord, change: (r: RunRecord) => RunRecord) =>
      Effect.flatMap(nowIso, (now) => runs.update(record.run_id, record.generation, change, now))

    const fail = (record: RunRecord, step: string, detail: string) =>
      update(record, (r) => ({ ...r, state: "failed", failure: { step, detail } }))

    /** `submitted`: the build job, queued once per run and platform (a repeat finds the same job). */
    const queueBuild = (record: RunRecord) =>
      Effect.gen(function* () {
        const recipe = record.steps.recipe as unknown as ReleaseRecipe
        const target = (record.steps.builder as { target: string }).target
        const key = `${record.run_id}:${recipe.platform}`
        const job = yield* queue.submit({
          kind: "release-build",
          target,
          argv: [...remoteCtl, "release", "build", "--run", record.run_id],
          idempotencyKey: key
        })
        return yield* update(record, (r) => ({
          ...r,
          state: "building",
          steps: { ...r.steps, build: { job: job.id, key, target } satisfies BuildStep }
        }))
      })

    /** `building`: waits for the job (until `deadline`), then records its output or its failure. */
    const awaitBuild = (record: RunRecord, deadline: number, onProgress: SubmitRequest["onProgress"]) =>
      Effect.gen(function* () {
        const build = record.steps.build as unknown as BuildStep
        let lines = -1
        for (;;) {
          const job = yield* queue.get(build.job).pipe(Effect.orDie)
          if (job.state === "succeeded") break
          if (job.state === "failed" || job.state === "cancelled") {
            const last = yield* queue.lastLine(build.job, "stderr")
            return yield* fail(
              record,
              "build",
              `job ${job.id} on ${build.target} ${job.state}${job.exitCode === null ? "" : ` (exit ${job.exitCode})`}${job.error === null ? "" : `: ${job.error}`}${Option.isSome(last) ? ` — ${last.value}` : ""}`
            )
          }
          if ((yield* Clock.currentTimeMillis) >= deadline) return record
          if (onProgress !== undefined) {
            const now = (yield* queue.output(build.job, Math.max(lines, 0), 10_000)).next
            if (now !== lines) yield* onProgress({ kind: "build", job: job.id, state: job.state, lines: now })
            lines = now
          }
          yield* Effect.sleep(Duration.millis(250))
        }
        const last = yield* queue.lastLine(build.job, "stdout")
        const answer = Option.flatMap(last, (line) => {
          try {
            const parsed = JSON.parse(line) as BuildAnswer
            return typeof parsed.release_output?.key === "string" ? Option.some(parsed.release_output) : Option.none()
          } catch {
            return Option.none()
          }
        })
        if (Option.isNone(answer))
          return yield* fail(record, "build", `job ${build.job} named no output on its last line`)
        const recipe = record.steps.recipe as unknown as ReleaseRecipe
        const expectedKey = runKeys(record.run_id).output(recipe.platform)
        if (answer.value.key !== expectedKey)
          return yield* fail(record, "build", `job ${build.job} named ${answer.value.key}, not ${expectedKey}`)
        const stored = yield* store.get(expectedKey)
        if (Option.isNone(stored) || stored.value.sha256 !== answer.value.sha256)
          return yield* fail(record, "build", `${expectedKey} is not what job ${build.job} answered`)
        const output = JSON.parse(new TextDecoder().decode(stored.value.bytes)) as BuildOutput
        const prefix = `release-runs/${record.run_id}/builds/${recipe.platform}/`
        for (const object of [output.artifact, output.qualification]) {
          const head = yield* store.head(object.key)
          if (!object.key.startsWith(prefix) || Option.isNone(head) || head.value.sha256 !== object.sha256)
            return yield* fail(
              record,
              "build",
              `the output names ${object.key}, which the store does not hold as named`
            )
        }
        return yield* update(record, (r) => ({
          ...r,
          state: "publishing",
          steps: { ...r.steps, output: { key: expectedKey, sha256: stored.value.sha256, ...output } }
        }))
      })

    /** A stored object copied into `file`, its digest checked against what the run recorded. */
    const download = (key: string, file: string, sha256: string) =>
      Effect.gen(function* () {
        const body = yield* store.read(key)
        if (Option.isNone(body)) return Option.none<string>()
        yield* Effect.acquireUseRelease(
          Effect.sync(() => fs.openSync(file, "wx", 0o600)),
          (fd) => Stream.runForEach(body.value.body, (chunk) => Effect.sync(() => fs.writeSync(fd, chunk))),
          (fd) => Effect.sync(() => fs.closeSync(fd))
        )
        const digest = yield* Effect.promise(() => fileDigest(file))
        return digest.sha256 === sha256 ? Option.some(file) : Option.none<string>()
      })

    /** `publishing`: the canonical objects in order (resumed where they stand), then the catalog entry. */
    const publish = (record: RunRecord, pauseMillis: number, onProgress: SubmitRequest["onProgress"]) =>
      Effect.scoped(
        Effect.gen(function* () {
          const output = record.steps.output as unknown as BuildOutput
          const dir = yield* spool
          const artifact = yield* download(
            output.artifact.key,
            path.join(dir, "release.tar.gz"),
            output.artifact.sha256
          )
          const qualification = yield* store.get(output.qualification.key)
          if (
            Option.isNone(artifact) ||
            Option.isNone(qualification) ||
            qualification.value.sha256 !== output.qualification.sha256
          )
            return yield* fail(record, "publication", "the build's output objects no longer match its output record")
          const published = yield* publisher
            .publishRelease(
              {
                product: record.inputs.product,
                version: record.inputs.version,
                channel: record.inputs.channel,
                createdAt: record.created_at,
                source: record.inputs.source,
                platform: output.platform,
                binary: output.binary,
                artifactFile: artifact.value,
                qualification: JSON.parse(new TextDecoder().decode(qualification.value.bytes))
              },
              (step) =>
                Effect.zipRight(
                  onProgress === undefined ? Effect.void : onProgress({ kind: "published", step }),
                  pauseMillis > 0 ? Effect.sleep(Duration.millis(pauseMillis)) : Effect.void
                )
            )
            .pipe(Effect.either)
          if (Either.isLeft(published)) {
            const error = published.left
            if (error instanceof PublicationConflict) return yield* fail(record, "publication", error.detail)
            if (error instanceof ObjectStoreError) return yield* error
            // Reading the spooled artifact failed: this host's disk, not the run's state.
            return yield* Effect.die(error)
          }
          const trusted = yield* authority.trusted
          const entry = yield* catalog
            .record({
              product: record.inputs.product,
              version: record.inputs.version,
              channel: record.inputs.channel,
              platform: output.platform,
              revision: record.inputs.source.revision,
              tree: record.inputs.source.tree,
              source_sha256: record.inputs.source.sha256,
              manifest_sha256: published.right.manifest_sha256,
              key_id: trusted.key_id,
              created_at: record.created_at
            })
            .pipe(Effect.either)
          if (Either.isLeft(entry)) return yield* fail(record, "catalog", entry.left.detail)
          return yield* update(record, (r) => ({
            ...r,
            state: "published",
            steps: {
              ...r.steps,
              publication: {
                manifest_key: releaseKey(record.inputs.product, record.inputs.version, "release.json"),
                manifest_sha256: published.right.manifest_sha256,
                objects: published.right.steps.map((s) => s.file)
              },
              catalog: { outcome: entry.right }
            }
          }))
        })
      )

    /**
     * Drives the run from its record until it is published or failed, or — while its build job has not finished —
     * until `deadline`. A record another writer changed meanwhile is read again and decided again.
     */
    const advance = (
      runId: string,
      options: {
        readonly deadline: number
        readonly stepPauseMillis: number
        readonly onProgress?: SubmitRequest["onProgress"]
      }
    ) =>
      Effect.gen(function* () {
        let lastGeneration = -1
        for (;;) {
          const found = yield* runs.read(runId)
          if (Option.isNone(found)) return yield* refused(`no run ${runId}`)
          const record = found.value.record
          if (options.onProgress !== undefined && record.generation !== lastGeneration)
            yield* options.onProgress({ kind: "state", record })
          lastGeneration = record.generation
          const next = yield* Effect.gen(function* () {
            switch (record.state) {
              case "published":
              case "failed":
                return Option.none<RunRecord>()
              case "submitted":
                return Option.some(yield* queueBuild(record))
              case "building": {
                const after = yield* awaitBuild(record, options.deadline, options.onProgress)
                return after.generation === record.generation ? Option.none<RunRecord>() : Option.some(after)
              }
              case "publishing":
                return Option.some(yield* publish(record, options.stepPauseMillis, options.onProgress))
            }
          }).pipe(
            Effect.catchIf(
              (error) => error instanceof RunRecordConflict,
              () => Effect.succeed(Option.some(record))
            )
          )
          if (Option.isNone(next)) return record
        }
      })

    /**
     * `ctl release submit`: refuses a dirty or uncommitted source, a bad version or channel, a source without a
     * recipe or a platform without a builder, and a version reserved for another revision — each before anything
     * is written. Then the source object, the submission's catalog record and the run record (all create-only: a
     * repeated submit finds them), and the run is advanced as far as it goes within `waitMillis`.
     */
    const submit = (request: SubmitRequest) =>
      Effect.scoped(
        Effect.gen(function* () {
          if (!VERSION_PATTERN.test(request.version))
            return yield* refused(
              `version ${JSON.stringify(request.version)} is not [0-9A-Za-z][0-9A-Za-z.+_-]* (at most 64)`
            )
          if (!CHANNEL_PATTERN.test(request.channel))
            return yield* refused(`channel ${JSON.stringify(request.channel)} is not [a-z][a-z0-9-]* (at most 32)`)
          const recipeFile = request.recipeFile ?? RECIPE_FILE
          if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(recipeFile) || recipeFile.split("/").includes(".."))
            return yield* refused(`${recipeFile} is not a relative path inside the tree`)
          // Not a work tree's top is the source's problem (SOURCE_REFUSED), not a missing recipe.
          yield* checkSourceTop(request.source)
          const headRecipe = yield* recipeOrRefused(request.source, "HEAD", recipeFile)
          const dir = yield* spool
          const archive = path.join(dir, "source.tar.gz")
          const source = yield* archiveSource(request.source, headRecipe.recipe.product, request.version, archive)
          const { recipe, sha256: manifestSha256 } = yield* recipeOrRefused(request.source, source.revision, recipeFile)
          if (manifestSha256 !== headRecipe.sha256 || recipe.product !== headRecipe.recipe.product)
            return yield* refused(`${request.source} changed while it was archived: submit again`)
          const builder = yield* builderFor(recipe.platform, recipe.secrets ?? {})
          yield* authority.trusted
          const inputs: RunInputs = {
            product: recipe.product,
            version: request.version,
            channel: request.channel,
            source,
            manifest_sha256: manifestSha256
          }
          const runId = runIdOf(inputs)
          yield* catalog.reserve(recipe.product, request.version, [recipe.platform], source.revision)
          yield* catalog.submitted({
            run_id: runId,
            product: recipe.product,
            version: request.version,
            channel: request.channel,
            platform: recipe.platform,
            revision: source.revision,
            tree: source.tree,
            source_sha256: source.sha256,
            source_size: source.size,
            manifest_sha256: manifestSha256
          })
          const keys = runKeys(runId)
          const written = yield* store.write(keys.source, fileStream(archive), { kind: "absent" }).pipe(Effect.orDie)
          if (!written.written && Option.getOrUndefined(written.head)?.sha256 !== source.sha256)
            return yield* refused(`${keys.source} exists with other bytes: the store was changed by hand`)
          const epoch = yield* commitTime(request.source, source.revision)
          const opened = yield* runs.open(inputs, yield* nowIso, {
            source: { key: keys.source, sha256: source.sha256, size: source.size },
            recipe: { ...recipe, source_date_epoch: epoch, recipe_file: recipeFile },
            builder: { target: builder },
            ...(request.tag === undefined ? {} : { tag: { name: request.tag.name, kind: request.tag.kind } })
          })
          if (request.drive === "elsewhere") {
            const now = yield* runs.read(runId)
            return {
              run_id: runId,
              created: opened.created,
              record: Option.isSome(now) ? now.value.record : opened.record
            } satisfies SubmitAnswer
          }
          const deadline = (yield* Clock.currentTimeMillis) + request.waitMillis
          const record = yield* advance(runId, {
            deadline,
            stepPauseMillis: request.stepPauseMillis ?? 0,
            onProgress: request.onProgress
          })
          return { run_id: runId, created: opened.created, record } satisfies SubmitAnswer
        })
      )

    return { submit, advance } as const
  }),
  dependencies: [FleetConfig.Default]
}) {}
