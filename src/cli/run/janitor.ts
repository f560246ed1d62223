import { Effect, Option, Schedule } from "effect"
import {
  type CleanupReportDocument,
  type CtlFailure,
  JanitorPassOperation,
  type JanitorPassPayload,
  JanitorReportOperation,
  type JanitorState
} from "../../contracts/fleet/HostAgent.js"
import { hasControlCharacter } from "../../contracts/shared/Text.js"
import { Janitor } from "../../services/fleet/agent/janitor/Janitor.js"
import type { Trigger } from "../../services/fleet/agent/janitor/JanitorReport.js"
import { renderJanitorLaunchd, renderJanitorSystemd } from "../../services/fleet/agent/janitor/JanitorUnits.js"
import {
  type RemoteAnswer,
  type RemoteAnswerInvalid,
  RemoteCtl,
  type RemoteCtlFailed
} from "../../services/fleet/control/RemoteCtl.js"
import { unitSettingsProblem } from "../../services/fleet/shared/UnitSettings.js"
import type { cleanersListConfig, diskCleanupConfig, reclaimConfig, reportConfig } from "../janitor.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit, printJson, usageError } from "../Output.js"

type CleanerPart = {
  status?: string
  reason?: string
  root?: string
  root_resolved_from?: string | null
  skipped_counts?: Record<string, number>
  candidates?: ReadonlyArray<{ path: string; bytes: number; reason: string }>
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`

/** Where the policy came from, in words. */
const policyLine = (r: CleanupReportDocument) => {
  const source = r.policy_source
  if (source === null) return []
  const from =
    source.kind === "none"
      ? "no registry"
      : `${source.kind} registry ${source.location ?? ""}${source.freshness === "cached" ? " (last valid copy)" : ""}`
  return [
    `policy: target ${source.target}, ${source.declared ? "declared" : "built-in reporting default"}, from ${from}`
  ]
}

/** A path as one line: one holding a line break or another control character is shown quoted (JSON), so a
 * crafted directory name cannot forge lines of the report. */
const shown = (file: string) => (hasControlCharacter(file) ? JSON.stringify(file) : file)

const human = (r: CleanupReportDocument) => {
  const cleaners = Object.entries(r.cleaners as Record<string, CleanerPart>)
  return [
    `${r.host}: ${r.outcome}${r.detail === null ? "" : ` (${r.detail})`}${r.dry_run ? " [dry run]" : ""}`,
    ...policyLine(r),
    `free ${r.free_bytes_before === null ? "unknown" : `${(r.free_bytes_before / 1024 ** 3).toFixed(1)} GiB`}` +
      `${r.low_free_gb === null ? "" : `, watermark ${r.low_free_gb} GiB, target ${r.target_free_gb} GiB`}`,
    `deleted ${r.deleted.length} item(s), ${(r.deleted_bytes / 1024 ** 2).toFixed(1)} MiB` +
      `${r.caps.length > 0 ? `; stopped by ${r.caps.join(", ")}` : ""}`,
    ...cleaners.flatMap(([name, part]) => [
      `${name}: ${part.status ?? "scanned"}${part.reason === undefined ? "" : ` (${part.reason})`}${
        part.root === undefined ? "" : ` root ${part.root}`
      }${part.root_resolved_from == null ? "" : ` (declared as ${part.root_resolved_from})`}`,
      // What a deleting pass would take (or, in enforce mode, what it considered).
      ...(part.candidates ?? []).map(
        (c) =>
          `  ${r.outcome === "report_only" ? "would delete" : "candidate"} ${shown(c.path)} (${mib(c.bytes)}, ${c.reason})`
      ),
      ...Object.entries(part.skipped_counts ?? {}).map(([reason, n]) => `  skipped ${reason}: ${n}`)
    ]),
    ...r.deleted.map((d) => `  deleted ${shown(d.path)} (${mib(d.bytes)})`),
    ...r.errors.map((e) => `  error ${shown(e.path)}: ${e.error}`)
  ].join("\n")
}

const failedOutcomes = new Set(["invalid_or_unavailable_policy", "partial_error"])

const runPass = (options: {
  dryRun: boolean
  toTarget: boolean
  writer: "watch"
  trigger: Trigger
  json: boolean
  reason?: string | undefined
  /** One of many passes (--watch): each report on one line. */
  stream?: boolean
}) =>
  Effect.gen(function* () {
    // A progress line on a terminal (stderr), never in --json output or in logs.
    const tty = process.stderr.isTTY === true && !options.json
    const report = yield* (yield* Janitor).pass({
      writer: options.writer,
      trigger: options.trigger,
      dryRun: options.dryRun,
      toTarget: options.toTarget,
      reason: options.reason,
      onProgress: tty
        ? (scanned) => process.stderr.write(`\rscanning: ${scanned.toLocaleString("en")} entries`)
        : undefined
    })
    if (tty) process.stderr.write("\r\x1b[K")
    // A watch loop prints one report per pass: as JSON lines (one compact document per line), so a reader can
    // split the stream; a single pass prints one document.
    if (options.json && options.stream === true) yield* printJson(report, { compact: true })
    else yield* emit(options.json, report, human)
    return report
  })

/** What a target's janitor answers (the host protocol's janitor report or pass), relayed as it came. */
type Relayed = typeof JanitorState.Type | CleanupReportDocument | CtlFailure

/**
 * Another target's janitor runs there: the same command through the target's host channel, with
 * `--here --json` (the host protocol's janitor report, or pass when `pass` says how), its answer relayed and its
 * exit code kept.
 */
const onTarget = (target: string, pass: JanitorPassPayload["apply"] | "report", asJson: boolean) =>
  Effect.gen(function* () {
    const remote = yield* RemoteCtl
    const declared = yield* remote
      .target(target)
      .pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
    if (declared.channel === "local") {
      return yield* new CommandFailed({
        detail: `${target} is reached locally but this host is ${(yield* Janitor).host}: set KEEL_HOST=${target} or pass --here`
      })
    }
    const asked: Effect.Effect<RemoteAnswer<Relayed>, RemoteCtlFailed | RemoteAnswerInvalid> = pass === "report"
      ? remote.call(declared, JanitorReportOperation, { target })
      : remote.call(declared, JanitorPassOperation, { target, apply: pass })
    const result = yield* asked.pipe(Effect.mapError((error) => new CommandFailed({ detail: error.detail })))
    yield* emit(asJson, result.answer, (b) =>
      "cleanup_state" in b
        ? b.cleanup_state.report === null
          ? `${target}: never_run`
          : // A pass an older ctl recorded is shown with the fields it has.
            human(b.cleanup_state.report as CleanupReportDocument)
        : "error" in b
          ? `${target}: ${b.error.detail}`
          : human(b)
    )
    if (result.exitCode !== 0) return yield* new ExitWith({ code: result.exitCode ?? 1 })
    return true
  })

export const diskCleanup = ({
  ctlCommand,
  dryRun,
  envFile,
  group,
  interval,
  json,
  os,
  printUnits,
  timer,
  user,
  watch
}: Parsed<typeof diskCleanupConfig>) =>
  Effect.gen(function* () {
    if (printUnits) {
      const unitOptions = {
        ctl: ctlCommand.split(" ").filter((p) => p.length > 0),
        intervalSeconds: interval,
        user: Option.getOrUndefined(user),
        group: Option.getOrUndefined(group),
        environmentFile: Option.getOrUndefined(envFile),
        environment: yield* (yield* Janitor).unitEnvironment
      }
      const problem = unitSettingsProblem({ ...unitOptions, command: unitOptions.ctl })
      if (problem !== undefined) return yield* new CommandFailed({ detail: problem })
      const darwin = Option.getOrElse(os, () => (process.platform === "darwin" ? "darwin" : "linux")) === "darwin"
      const files: Record<string, string> = darwin
        ? renderJanitorLaunchd(unitOptions)
        : renderJanitorSystemd(unitOptions)
      return yield* emit(json, files, (all) =>
        Object.entries(all)
          .map(([name, text]) => `# ${name}\n${text}`)
          .join("\n")
      )
    }
    if (watch) {
      yield* runPass({ dryRun, toTarget: false, writer: "watch", trigger: "timer", json, stream: true }).pipe(
        Effect.repeat(Schedule.spaced(`${interval} seconds`))
      )
      return
    }
    const report = yield* runPass({
      dryRun,
      toTarget: false,
      writer: "watch",
      trigger: timer ? "timer" : "manual",
      json
    })
    if (failedOutcomes.has(report.outcome)) return yield* new ExitWith({ code: 1 })
  })

export const report = ({ here, json, target }: Parsed<typeof reportConfig>) =>
  Effect.gen(function* () {
    if (!here && target !== (yield* Janitor).host) return yield* onTarget(target, "report", json)
    const last = yield* (yield* Janitor).lastReport
    yield* emit(json, { cleanup_state: { outcome: last?.outcome ?? "never_run", report: last } }, (r) =>
      r.cleanup_state.report === null ? `${target}: never_run` : human(r.cleanup_state.report)
    )
  })

export const cleanersList = ({ json, target }: Parsed<typeof cleanersListConfig>) =>
  Effect.gen(function* () {
    const listing = yield* (yield* Janitor).cleaners(target)
    yield* emit(json, listing, (r) =>
      [
        `${r.target}: mode ${r.mode}${
          r.policy_error !== null
            ? ` (no usable policy: ${r.policy_error})`
            : r.declared
              ? ""
              : " (built-in reporting default)"
        }`,
        ...r.cleaners.map(
          (c) => `  ${c.name}: ${c.configured ? "configured" : "not configured"}${c.available ? "" : ", not built yet"}`
        )
      ].join("\n")
    )
    // Like `space report`: no usable policy for the target (an unknown one, a registry that does not validate)
    // is a failure, after the listing says why.
    if (listing.policy_error !== null)
      return yield* new CommandFailed({
        code: "INVALID_OR_UNAVAILABLE_POLICY",
        detail: `${target}: no usable policy: ${listing.policy_error}`
      })
  })

export const reclaim = ({ apply, dryRun, here, json, reason, target }: Parsed<typeof reclaimConfig>) =>
  Effect.gen(function* () {
    if (apply === dryRun) return yield* usageError("say --dry-run or --apply (one of them)")
    if (apply && Option.getOrElse(reason, () => "").trim() === "")
      return yield* usageError("--apply needs --reason with some text (why, for the record)")
    if (!here && target !== (yield* Janitor).host)
      return yield* onTarget(target, dryRun ? null : { reason: Option.getOrElse(reason, () => "") }, json)
    const result = yield* runPass({
      dryRun,
      toTarget: true,
      writer: "watch",
      trigger: "reclaim",
      json,
      reason: Option.getOrUndefined(reason)
    })
    if (failedOutcomes.has(result.outcome)) return yield* new ExitWith({ code: 1 })
  })
