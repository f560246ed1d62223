import type { HttpClientError } from "@effect/platform"
import { Console, Duration, Effect, Option } from "effect"
import { RunId, type RunRecord } from "../../contracts/fleet/ReleaseRuns.js"
import { CatalogMaintenance } from "../../services/fleet/control/releases/CatalogMaintenance.js"
import { ReleaseAuthority, SIGNING_KEY_FIELD } from "../../services/fleet/control/releases/ReleaseAuthority.js"
import { buildRun } from "../../services/fleet/control/releases/ReleaseBuilder.js"
import { type ProductRollout, ReleaseRollout } from "../../services/fleet/control/releases/ReleaseRollout.js"
import { ReleaseRun, type RunProgress } from "../../services/fleet/control/releases/ReleaseRun.js"
import { RunCopies } from "../../services/fleet/control/releases/RunCopies.js"
import { type StepResult, TagRelease, tagStanding } from "../../services/fleet/control/releases/TagRelease.js"
import {
  controlPlaneAt,
  fetchWithin,
  refusalOf,
  thrownBy
} from "../../services/fleet/shared/objects/ControlPlaneHttp.js"
import {
  configuredAccess,
  makeObjectApiClient,
  readVaultField,
  resilientClient,
  retryTransient
} from "../../services/fleet/shared/objects/ObjectApiClient.js"
import { runRecordKey } from "../../services/fleet/shared/releases/RunRecords.js"
import { Vault } from "../../services/platform/vault/Vault.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit, failWith, printJson } from "../Output.js"
import {
  type buildConfig,
  type keyCreateConfig,
  type keyShowConfig,
  line,
  type promoteConfig,
  type pruneConfig,
  type rolloutConfig,
  type submitConfig,
  type syncConfig,
  type tagConfig
} from "../release.js"
import { controlPlaneAccess } from "./fleet.js"

/** Exit code of a submit whose build has not finished within its wait: submit again to attach. */
export const EXIT_RUN_IN_PROGRESS = 3

const runLine = (record: RunRecord) => {
  const build = record.steps.build as { job?: string; target?: string } | undefined
  return `run ${record.run_id}: ${record.state}${build?.job === undefined ? "" : ` (build ${build.job} on ${build.target})`}`
}

const submitProgress = (json: boolean) => {
  const tty = process.stderr.isTTY === true && !json
  let shown = ""
  return (event: RunProgress) =>
    Effect.sync(() => {
      const text =
        event.kind === "state"
          ? runLine(event.record)
          : event.kind === "build"
            ? `building: job ${event.job} ${event.state}, ${event.lines} output line(s)`
            : `published ${event.step.file} (${event.step.outcome})`
      if (text === shown) return
      shown = text
      if (tty) process.stderr.write(`\r\x1b[2K${text}${event.kind === "build" ? "" : "\n"}`)
      else if (!json) process.stderr.write(`${text}\n`)
    })
}

/** Hands the run to the control plane's ReleaseRun workflow (it attaches to the run already there). */
const handOver = (runId: string) =>
  Effect.gen(function* () {
    const access = yield* controlPlaneAccess("release-submit")
    const client = yield* controlPlaneAt(access.url, access.token)
    const started = yield* client.workflows.startReleaseRun({ payload: { run_id: RunId.make(runId) } }).pipe(
      Effect.catchAll((error) => {
        const tag = (error as { _tag?: string })._tag
        if (tag === "RequestError")
          return new CommandFailed({
            detail: `the control plane: ${thrownBy(error as HttpClientError.RequestError).message}`
          })
        // Any answer but 202 (refusals stay raw: ControlPlaneHttp) is a refusal, named by its code or status.
        if (tag === "ResponseError")
          return Effect.flatMap(refusalOf((error as HttpClientError.ResponseError).response), ({ body, status }) =>
            Effect.fail(
              new CommandFailed({
                detail: `the control plane refused the run: ${body.code ?? status}: ${body.detail ?? ""}`
              })
            )
          )
        return Effect.succeed({ execution_id: "" })
      })
    )
    return { execution_id: started.execution_id, url: access.url }
  }).pipe(Effect.provide(fetchWithin(30_000)))

const rolloutLine = (r: ProductRollout) =>
  [
    `${r.ok ? "ok    " : "FAILED"} ${r.product} ${r.version} (generation ${r.generation}): ${r.detail}`,
    ...r.targets.map(
      (t) =>
        `       ${t.target}/${t.binary}: declaration ${t.declaration}, delivery ${t.delivery}${t.services.length === 0 ? "" : `, services ${t.services.map((s) => `${s.name} ${s.ok ? "ok" : s.detail}`).join(", ")}`} — ${t.detail}`
    ),
    ...(r.deployment === null ? [] : [`       ${r.deployment.key} (${r.deployment.outcome})`])
  ].join("\n")

const stepLine = (name: string, step: StepResult) =>
  `${name.padEnd(18)} ${step.outcome}${step.detail === "" ? "" : ` — ${step.detail}`}${(step.targets ?? []).map((t) => `\n${" ".repeat(19)}${t.target}/${t.binary}: ${t.delivery} (${t.ok ? "ok" : t.detail})`).join("")}`

export const sync = ({ json, root }: Parsed<typeof syncConfig>) =>
  Effect.gen(function* () {
    const report = yield* (yield* CatalogMaintenance)
      .sync(root, (release) => (json ? Effect.void : Console.log(line(release))))
      .pipe(Effect.catchTag("ReleaseAuthorityUnavailable", failWith(json)))
    if (json) yield* printJson(report)
    else
      yield* Console.log(
        `${report.releases.length} release(s): ${report.releases.filter((r) => r.outcome === "imported").length} imported, ${report.releases.filter((r) => r.outcome === "present").length} present, ${report.releases.filter((r) => r.outcome === "refused").length} refused`
      )
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })

export const audit = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const report = yield* (yield* CatalogMaintenance).audit.pipe(
      Effect.catchTag("ReleaseAuthorityUnavailable", failWith(json))
    )
    yield* emit(json, report, (r) =>
      [
        `trusted key ${r.trusted_key_id}`,
        ...r.releases.map(
          (release) =>
            `${release.ok ? "ok      " : "FAILED  "} ${release.product} ${release.version}${release.problems.map((p) => `\n         ${p.code}: ${p.detail}`).join("")}`
        ),
        r.ok ? `${r.releases.length} release(s) verified` : "the catalog does not verify"
      ].join("\n")
    )
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })

export const keyCreate = ({ item, json }: Parsed<typeof keyCreateConfig>) =>
  Effect.gen(function* () {
    const created = yield* (yield* ReleaseAuthority).createSigningKey(item).pipe(
      // COMMAND_FAILED, as the refusal always answered (it names no code of its own).
      Effect.catchTag("SigningKeyExists", (e) => new CommandFailed({ detail: e.detail })),
      Effect.catchTag("VaultInvalid", failWith(json))
    )
    yield* emit(json, created, (k) =>
      [
        `created ${k.item} (field ${SIGNING_KEY_FIELD}; the private key stays in the vault)`,
        `key id      ${k.key_id}`,
        `public key  ${k.public_key}`,
        "set settings.release.signing_key_item and settings.release.signing_key_id in the registry to use it"
      ].join("\n")
    )
  })

export const keyShow = ({ item, json }: Parsed<typeof keyShowConfig>) =>
  Effect.gen(function* () {
    const key = yield* (yield* Vault).publicKey(item, SIGNING_KEY_FIELD).pipe(
      Effect.catchTags({
        VaultItemNotFound: failWith(json),
        VaultCorrupt: failWith(json),
        VaultKeyRefused: failWith(json)
      })
    )
    yield* emit(json, { item, ...key }, (k) => `key id      ${k.key_id}\npublic key  ${k.public_key}`)
  })

export const submit = ({
  channel,
  detach,
  json,
  source,
  stepPauseMs,
  version,
  waitSeconds
}: Parsed<typeof submitConfig>) =>
  Effect.gen(function* () {
    const answer = yield* (yield* ReleaseRun)
      .submit({
        source,
        version,
        channel,
        waitMillis: waitSeconds * 1000,
        stepPauseMillis: stepPauseMs,
        onProgress: submitProgress(json),
        drive: detach ? "elsewhere" : "here"
      })
      .pipe(
        Effect.catchTags({
          SubmitRefused: failWith(json),
          SourceRefused: failWith(json),
          VersionReserved: failWith(json),
          ReleaseAuthorityUnavailable: failWith(json)
        })
      )
    const handedTo = detach ? yield* handOver(answer.run_id) : null
    yield* emit(
      json,
      {
        run_id: answer.run_id,
        created: answer.created,
        record_key: runRecordKey(answer.run_id),
        workflow: handedTo,
        record: answer.record
      },
      (a) =>
        [
          `${a.created ? "submitted" : "found"} ${runLine(a.record)}`,
          ...(a.workflow === null
            ? []
            : [`handed to the control plane's ReleaseRun workflow (execution ${a.workflow.execution_id})`]),
          ...(a.record.state === "published"
            ? [`published releases/${a.record.inputs.product}/${a.record.inputs.version}/release.json`]
            : []),
          ...(a.record.failure === null ? [] : [`failed at ${a.record.failure.step}: ${a.record.failure.detail}`]),
          ...(a.record.state === "submitted" || a.record.state === "building" || a.record.state === "publishing"
            ? ["the run has not finished: submit again (same source, version and channel) to attach to it"]
            : [])
        ].join("\n")
    )
    if (answer.record.state === "failed") return yield* new ExitWith({ code: 1 })
    if (answer.record.state !== "published") return yield* new ExitWith({ code: EXIT_RUN_IN_PROGRESS })
  })

export const build = ({ run }: Parsed<typeof buildConfig>) =>
  Effect.gen(function* () {
    const asFailure = (e: { readonly code: string; readonly detail: string }) =>
      new CommandFailed({ detail: `${e.code}: ${e.detail}` })
    // A control plane restarting while this build runs is waited out (2 minutes a call), not a failed build.
    const within = Duration.minutes(2)
    const access = yield* retryTransient(configuredAccess(["KEEL_RELEASE_GRANT_FILE", "KEEL_GRANT_FILE"]), within).pipe(
      Effect.mapError(asFailure)
    )
    const client = yield* makeObjectApiClient(access).pipe(Effect.mapError(asFailure))
    const answer = yield* buildRun(resilientClient(client, within), run, {
      log: (text) => void process.stderr.write(text),
      secret: (reference) => retryTransient(readVaultField(access.vaultUrl, access.token, reference), within)
    }).pipe(Effect.mapError(asFailure))
    // Always one JSON line, and always the last line on stdout: the run reads the output's coordinates there.
    yield* printJson(answer, { compact: true })
  })

export const promote = ({ channel, expectGeneration, json, product, version }: Parsed<typeof promoteConfig>) =>
  Effect.gen(function* () {
    const promoted = yield* (yield* ReleaseRollout)
      .promote({
        product,
        version,
        channel: Option.getOrUndefined(channel),
        expectGeneration: Option.getOrUndefined(expectGeneration)
      })
      .pipe(Effect.catchTags({ RolloutRefused: failWith(json), PromotionConflict: failWith(json) }))
    yield* emit(
      json,
      promoted,
      (p) =>
        `promoted ${p.product} ${p.version} (${p.channel}): release_control generation ${p.generation}${p.previous === null ? "" : `, was ${p.previous}`}\nrun ctl release rollout to converge the targets`
    )
  })

export const rollout = ({ json, product, stepPauseMs }: Parsed<typeof rolloutConfig>) =>
  Effect.gen(function* () {
    const report = yield* (yield* ReleaseRollout)
      .rollout({
        product: Option.getOrUndefined(product),
        stepPauseMillis: stepPauseMs,
        onProgress: (p) =>
          json ? Effect.void : Effect.sync(() => void process.stderr.write(`${p.product} ${p.target}: ${p.step}\n`))
      })
      .pipe(Effect.catchTags({ RolloutRefused: failWith(json) }))
    yield* emit(json, report, (r) =>
      r.products.length === 0 ? "release_control promotes nothing" : r.products.map(rolloutLine).join("\n")
    )
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })

export const prune = ({ apply, json }: Parsed<typeof pruneConfig>) =>
  Effect.gen(function* () {
    const report = yield* (yield* RunCopies).prune(apply).pipe(Effect.orDie)
    yield* emit(json, report, (r) =>
      [
        ...r.reclaimed.map((c) => `${apply ? "deleted " : "would go"} ${c.key} (${c.bytes} bytes, ${c.reason})`),
        `${r.reclaimed.length} copy(ies), ${r.bytes} bytes ${apply ? "reclaimed" : "reclaimable"} of ${r.runs} run(s)${
          Object.keys(r.kept).length === 0
            ? ""
            : `; runs kept: ${Object.entries(r.kept)
                .map(([k, n]) => `${k} ${n}`)
                .join(", ")}`
        }`
      ].join("\n")
    )
  })

export const tag = ({ json, source, tag: name, waitSeconds }: Parsed<typeof tagConfig>) =>
  Effect.gen(function* () {
    const answer = yield* (yield* TagRelease).tag({ source, tag: name, waitMillis: waitSeconds * 1000 }).pipe(
      Effect.catchTags({
        TagRefused: failWith(json),
        ReleaseAuthorityUnavailable: failWith(json)
      })
    )
    yield* emit(json, answer, (a) =>
      [
        `${a.tag} (${a.kind} ${a.version} at ${a.revision})`,
        stepLine("native publication", a.native_publication),
        stepLine("native delivery", a.native_delivery),
        stepLine("linux publication", a.linux_publication),
        stepLine("linux delivery", a.linux_delivery),
        a.ok ? "released" : "not a complete release"
      ].join("\n")
    )
    const standing = tagStanding(answer)
    if (standing === "in_progress") return yield* new ExitWith({ code: EXIT_RUN_IN_PROGRESS })
    if (standing === "incomplete") return yield* new ExitWith({ code: 1 })
  })
