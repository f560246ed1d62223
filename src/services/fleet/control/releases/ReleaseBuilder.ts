import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Either, Option, Schema } from "effect"
import type { RunRecord } from "../../../../contracts/fleet/ReleaseRuns.js"
import { childEnv } from "../../../platform/ChildEnv.js"
import { fileDigest, sha256Hex } from "../../../platform/Digest.js"
import { redactValues } from "../../../platform/Redact.js"
import type { ObjectApiClient, ObjectApiError } from "../../shared/objects/ObjectApiClient.js"
import { canonicalBytes } from "../../shared/releases/CanonicalJson.js"
import { type BuildOutput, runKeys, runRecordKey } from "../../shared/releases/RunRecords.js"
import { ArchiveRefused, extractEntry } from "./ArchiveEntry.js"
import { parseRecipe, RECIPE_FILE, type ReleaseRecipe } from "./ReleaseRecipe.js"

/** The build could not be made or recorded; the run records this as its failure. */
export class BuildFailed extends Schema.TaggedError<BuildFailed>()("BuildFailed", {
  code: Schema.Literal("BUILD_FAILED"),
  detail: Schema.String
}) {}

/** The line a build job ends with on stdout: the output's coordinates, which the run reads back. */
export interface BuildAnswer {
  readonly release_output: { readonly key: string; readonly sha256: string; readonly built: boolean }
}

const failed = (detail: string) => new BuildFailed({ code: "BUILD_FAILED", detail })
const apiFailed = (what: string) => (error: ObjectApiError) => failed(`${what}: ${error.code}: ${error.detail}`)

/** Runs a command to its end, its output onto `log` (the job's output); answers the exit code. */
const run = (argv: ReadonlyArray<string>, cwd: string, env: Record<string, string>, log: (text: string) => void) =>
  Effect.async<number | null, BuildFailed>((resume) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    child.stdout.on("data", (chunk: Buffer) => log(chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => log(chunk.toString("utf8")))
    child.on("error", (error) => resume(Effect.fail(failed(`${argv[0]}: ${error.message}`))))
    child.on("close", (code) => resume(Effect.succeed(code)))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * One build of a release run, on its builder (`ctl release build --run <id>`, queued by `ctl release submit`):
 * reads the run record and the source archive through the object API, checks the archive is the run's (digest and
 * size) and its recipe the run's (manifest digest), extracts it, runs the recipe's build command in it with a built
 * environment, checks the artifact holds the recipe's executable, and writes the outputs create-only — the
 * attempt's `release.tar.gz` and `qualification.json`, then `output.json`, which the first finished attempt wins.
 * A platform whose `output.json` exists is not built again: its coordinates are answered as they are.
 */
/**
 * A log that never shows the given values: whole lines are held until complete and every occurrence of a secret
 * replaced by `[redacted]` (a value split across two writes is still found).
 */
export const redactingLog = (log: (text: string) => void, secrets: ReadonlyArray<string>) => {
  let pending = ""
  const redact = (text: string) => redactValues(text, secrets)
  return {
    write: (text: string) => {
      pending += text
      const end = pending.lastIndexOf("\n")
      if (end === -1) return
      log(redact(pending.slice(0, end + 1)))
      pending = pending.slice(end + 1)
    },
    flush: () => {
      if (pending !== "") log(redact(pending))
      pending = ""
    }
  }
}

type BuildOptions = {
  readonly builder?: string
  readonly log: (text: string) => void
  /** Reads a build secret (`item#field`) with the builder's own grant. */
  readonly secret?: (reference: string) => Effect.Effect<string, { readonly code: string; readonly detail: string }>
}

/** The run's source, downloaded and checked against the run (digest and size), extracted: its top directory. */
const extractSource = (client: ObjectApiClient, record: RunRecord, work: string, log: (text: string) => void) =>
  Effect.gen(function* () {
    const keys = runKeys(record.run_id)
    const sourceFile = path.join(work, "source.tar.gz")
    const source = yield* client.getFile(keys.source, sourceFile).pipe(Effect.mapError(apiFailed("the source")))
    if (Option.isNone(source)) return yield* failed(`the run's source ${keys.source} is missing`)
    const declared = record.inputs.source
    if (source.value.sha256 !== declared.sha256 || source.value.size !== declared.size)
      return yield* failed(
        `the source archive is not the run's: sha256 ${source.value.sha256} (${source.value.size} bytes), the run names ${declared.sha256} (${declared.size} bytes)`
      )
    const tree = path.join(work, "tree")
    fs.mkdirSync(tree)
    const untar = yield* run(["tar", "-xzf", sourceFile, "-C", tree, "--no-same-owner"], work, childEnv(), log)
    if (untar !== 0) return yield* failed(`tar could not extract the source (exit ${untar})`)
    return path.join(tree, `${record.inputs.product}-${record.inputs.version}`)
  })

/** The recipe in the extracted source, which must be the run's (its manifest digest). */
const recipeIn = (top: string, record: RunRecord) =>
  Effect.gen(function* () {
    const recipeFile = (record.steps.recipe as { recipe_file?: string }).recipe_file ?? RECIPE_FILE
    const recipePath = path.resolve(top, recipeFile)
    if (!recipePath.startsWith(`${top}${path.sep}`)) return yield* failed(`${recipeFile} is outside the source`)
    const recipeText = yield* Effect.try({
      try: () => fs.readFileSync(recipePath),
      catch: () => failed(`the source holds no ${recipeFile}`)
    })
    if (sha256Hex(recipeText) !== record.inputs.manifest_sha256)
      return yield* failed(`the source's ${recipeFile} is not the run's (manifest digest differs)`)
    const recipe = parseRecipe(recipeText.toString("utf8"))
    if (Either.isLeft(recipe)) return yield* failed(recipe.left)
    return recipe.right
  })

/** The recipe's secrets, read with this builder's grant: into the build's environment, never into its log. */
const secretsOf = (recipe: ReleaseRecipe, options: BuildOptions) =>
  Effect.gen(function* () {
    const secrets: Record<string, string> = {}
    for (const [name, reference] of Object.entries(recipe.secrets ?? {})) {
      if (options.secret === undefined) return yield* failed(`the recipe needs ${reference} and no vault is configured`)
      secrets[name] = yield* options
        .secret(reference)
        .pipe(Effect.mapError((e) => failed(`the build secret ${reference}: ${e.code}: ${e.detail}`)))
    }
    return secrets
  })

/**
 * The build command, in the source's top, seeing the release's identity and its secrets, nothing of Keel's (no
 * KEEL_* setting, no token); its log redacted. Then the artifact it made and the executable in it, with digests.
 */
const build = (
  record: RunRecord,
  platform: string,
  recipe: ReleaseRecipe,
  top: string,
  work: string,
  secrets: Record<string, string>,
  log: (text: string) => void
) =>
  Effect.gen(function* () {
    const buildLog = redactingLog(log, Object.values(secrets))
    const sourceDateEpoch = (record.steps.recipe as { source_date_epoch?: number }).source_date_epoch
    const exit = yield* run(
      recipe.build,
      top,
      childEnv({
        ...secrets,
        RELEASE_PRODUCT: record.inputs.product,
        RELEASE_VERSION: record.inputs.version,
        RELEASE_CHANNEL: record.inputs.channel,
        RELEASE_PLATFORM: platform,
        RELEASE_REVISION: record.inputs.source.revision,
        ...(typeof sourceDateEpoch === "number" ? { SOURCE_DATE_EPOCH: String(sourceDateEpoch) } : {})
      }),
      buildLog.write
    ).pipe(Effect.ensuring(Effect.sync(buildLog.flush)))
    if (exit !== 0) return yield* failed(`the build command exited ${exit ?? "by a signal"}`)
    const artifactFile = path.resolve(top, recipe.artifact)
    const stat = fs.lstatSync(artifactFile, { throwIfNoEntry: false })
    if (stat === undefined || !stat.isFile() || !artifactFile.startsWith(`${top}${path.sep}`))
      return yield* failed(`the build made no regular file ${recipe.artifact}`)
    const artifact = yield* Effect.promise(() => fileDigest(artifactFile))
    const binary = yield* Effect.tryPromise({
      try: () =>
        extractEntry(
          fs.createReadStream(artifactFile) as AsyncIterable<Uint8Array>,
          recipe.binary,
          path.join(work, "binary")
        ),
      catch: (e) => failed(`the artifact: ${e instanceof ArchiveRefused ? e.message : String(e)}`)
    })
    if (binary === null) return yield* failed(`the artifact holds no ${recipe.binary}`)
    return { artifactFile, artifact, binary }
  })

/**
 * The outputs, create-only: the attempt's `release.tar.gz` and `qualification.json`, then `output.json`, which the
 * first finished attempt wins (a later one answers the winner's coordinates).
 */
const publishOutputs = (
  client: ObjectApiClient,
  record: RunRecord,
  platform: string,
  builder: string,
  recipe: ReleaseRecipe,
  built: Effect.Effect.Success<ReturnType<typeof build>>,
  seconds: number
) =>
  Effect.gen(function* () {
    const runId = record.run_id
    const keys = runKeys(runId)
    const qualification = canonicalBytes({
      schema: "keel.qualification/v1",
      run_id: runId,
      product: record.inputs.product,
      version: record.inputs.version,
      platform,
      builder,
      source_sha256: record.inputs.source.sha256,
      manifest_sha256: record.inputs.manifest_sha256,
      build: { argv: [...recipe.build], exit_code: 0, seconds },
      artifact: { sha256: built.artifact.sha256, size: built.artifact.size },
      binary: { path: recipe.binary, sha256: built.binary.sha256, size: built.binary.size, mode: built.binary.mode }
    })
    const attempt = randomBytes(8).toString("hex")
    const artifactHead = yield* client
      .putFile(keys.build(platform, attempt, "release.tar.gz"), built.artifactFile, { kind: "absent" })
      .pipe(Effect.mapError(apiFailed("writing the artifact")))
    const qualificationHead = yield* client
      .put(keys.build(platform, attempt, "qualification.json"), qualification, { kind: "absent" })
      .pipe(Effect.mapError(apiFailed("writing the qualification")))
    if (artifactHead.sha256 !== built.artifact.sha256)
      return yield* failed(`the object API stored ${artifactHead.sha256}, the artifact is ${built.artifact.sha256}`)
    const output: BuildOutput = {
      schema: "keel.release-output/v1",
      run_id: runId,
      platform,
      builder,
      binary: recipe.binary,
      artifact: { key: artifactHead.key, sha256: artifactHead.sha256, size: artifactHead.size },
      qualification: { key: qualificationHead.key, sha256: qualificationHead.sha256, size: qualificationHead.size }
    }
    const written = yield* client.put(keys.output(platform), canonicalBytes(output), { kind: "absent" }).pipe(
      Effect.map((head) => Option.some(head.sha256)),
      // Another attempt finished first: its output stands, this one's objects stay unreferenced.
      Effect.catchIf(
        (error) => error.code === "PRECONDITION_FAILED",
        () => Effect.succeed(Option.none<string>())
      ),
      Effect.mapError(apiFailed("writing the output record"))
    )
    if (Option.isSome(written)) return answerOf(keys.output(platform), written.value, true)
    const winner = yield* client.head(keys.output(platform)).pipe(Effect.mapError(apiFailed("the output record")))
    if (Option.isNone(winner)) return yield* failed(`${keys.output(platform)} vanished`)
    return answerOf(keys.output(platform), winner.value.sha256, false)
  })

const answerOf = (key: string, sha256: string, built: boolean): BuildAnswer => ({
  release_output: { key, sha256, built }
})

export const buildRun = (client: ObjectApiClient, runId: string, options: BuildOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const builder = options.builder ?? os.hostname()
      const recordBytes = yield* client.get(runRecordKey(runId)).pipe(Effect.mapError(apiFailed("the run record")))
      if (Option.isNone(recordBytes)) return yield* failed(`no run ${runId} (${runRecordKey(runId)})`)
      const record = JSON.parse(new TextDecoder().decode(recordBytes.value)) as RunRecord
      const recipeStep = record.steps.recipe as { platform?: string } | undefined
      const platform = recipeStep?.platform
      if (platform === undefined) return yield* failed(`run ${runId} records no recipe`)
      const outputKey = runKeys(runId).output(platform)
      const existing = yield* client.head(outputKey).pipe(Effect.mapError(apiFailed("the output record")))
      if (Option.isSome(existing)) return answerOf(outputKey, existing.value.sha256, false)

      const work = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "keel-build-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      // The record's own run id names every key (the record at the run's key is the run's).
      const top = yield* extractSource(client, { ...record, run_id: runId }, work, options.log)
      const recipe = yield* recipeIn(top, record)
      const secrets = yield* secretsOf(recipe, options)
      const started = Date.now()
      const built = yield* build(record, platform, recipe, top, work, secrets, options.log)
      const seconds = Math.round((Date.now() - started) / 1000)
      return yield* publishOutputs(client, { ...record, run_id: runId }, platform, builder, recipe, built, seconds)
    })
  )
