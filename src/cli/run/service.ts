import { Effect, Option } from "effect"
import { probeUrl } from "../../services/fleet/agent/HostAgentLocal.js"
import { beaconEnsureRefusal } from "../../services/fleet/control/reconciler/Decision.js"
import { HostUnits } from "../../services/fleet/control/reconciler/HostUnits.js"
import { ServiceReconciler } from "../../services/fleet/control/reconciler/ServiceReconciler.js"
import type { ServiceReport, ServiceRow } from "../../services/fleet/control/reconciler/ServiceReport.js"
import { ServiceViews } from "../../services/fleet/control/reconciler/ServiceViews.js"
import { ServiceManager } from "../../services/fleet/shared/units/ServiceManager.js"
import { renderUnit, unrenderable } from "../../services/fleet/shared/units/UnitRender.js"
import { thisHostName } from "../../services/platform/AppConfig.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit, errorCode, failWith, table } from "../Output.js"
import type { convergeConfig, showConfig, verifyConfig } from "../service.js"

/** A `--here` answer: what the control plane's HostUnits reads back from the host's `ctl`. */
export const hereAnswer = <A extends object, E extends { readonly _tag: string; readonly detail: string }, R>(
  asJson: boolean,
  outcome: Effect.Effect<A, E, R>
) =>
  outcome.pipe(
    Effect.matchEffect({
      onSuccess: (answer) => emit(asJson, { ok: true, ...answer }, (a) => JSON.stringify(a)),
      onFailure: (error) =>
        Effect.zipRight(
          emit(
            asJson,
            {
              ok: false,
              error: {
                code: errorCode(error),
                _tag: error._tag,
                ...("command" in error && typeof error.command === "string" ? { command: error.command } : {}),
                detail: error.detail
              }
            },
            (a) => `${a.error._tag}: ${a.error.detail}`
          ),
          Effect.fail(new ExitWith({ code: 1 }))
        )
    })
  )

/** The declaration of `name` on this host (`--target`, else KEEL_HOST). */
const hereDeclaration = (service: string, target: Option.Option<string>) =>
  Effect.gen(function* () {
    const host = Option.getOrElse(target, () => "")
    const self = host === "" ? yield* Effect.orDie(thisHostName) : host
    return yield* (yield* ServiceReconciler).declared(service, self)
  })

export const hereVerb = (
  verb: "show" | "ensure" | "kick" | "reassert",
  service: string,
  target: Option.Option<string>
) =>
  Effect.gen(function* () {
    const manager = yield* ServiceManager
    const found = yield* hereDeclaration(service, target)
    const declared = { name: service, unit: found.service.unit, program: found.service.program }
    if (verb === "show") return { state: yield* manager.inspect(declared) }
    if (verb === "reassert") return yield* manager.reassertTimer(declared)
    const beacon = verb === "ensure" ? beaconEnsureRefusal(found.service) : undefined
    if (beacon !== undefined)
      return yield* Effect.fail({ _tag: "ServiceOperationRefused", code: "ENSURE_REFUSED", detail: beacon })
    // Not renderProblem: host recovery ensures recovery-managed units through here (the control plane's rules decide).
    const problem = unrenderable(found.service)
    if (problem !== undefined)
      return yield* Effect.fail({
        _tag: "DeclarationIncomplete",
        code: "DECLARATION_INCOMPLETE",
        detail: `${service}: ${problem}`
      })
    const definition = renderUnit(found.service, found.target.os)
    return verb === "kick" ? yield* manager.kick(definition) : yield* manager.ensure(definition)
  })

/** A one-line account of a row: what was found, decided and done. */
export const describeRow = (row: ServiceRow) =>
  `${row.target}/${row.name}: ${row.decision.state} → ${row.decision.action} (${row.execution.status}${row.execution.skipped_because ? `: ${row.execution.skipped_because}` : ""}${row.execution.change ? `: ${row.execution.change}` : ""}${row.execution.error ? `: ${row.execution.error}` : ""}) — ${row.decision.reason}`

/** Whether a run ended with a failed execution (the command's exit status). */
export const runFailed = (report: ServiceReport) => report.services.some((s) => s.execution.status === "failed")

export const list = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const listing = yield* (yield* ServiceViews).listing
    yield* emit(json, listing, (l) =>
      [
        l.run_id === null
          ? "no reconciliation run yet (ctl optimize run)"
          : `as of ${l.checked_at} (run ${l.run_id}, mode ${l.mode})`,
        table(
          ["TARGET", "SERVICE", "KIND", "STATE", "ACTION", "EXECUTION"],
          l.services.map((s) => [s.target, s.name, s.kind, s.state, s.action ?? "-", s.execution ?? "-"])
        )
      ].join("\n")
    )
  }).pipe(Effect.catchTags({ FleetRegistryUnavailable: failWith(json), FleetRegistryInvalid: failWith(json) }))

export const verify = ({ here, json, url }: Parsed<typeof verifyConfig>) =>
  Effect.gen(function* () {
    if (here) {
      if (Option.isNone(url)) return yield* new CommandFailed({ detail: "--here needs --url" })
      return yield* emit(json, { ok: true, probe: yield* probeUrl(url.value) }, (a) => `${url.value}: ${a.probe}`)
    }
    const sweep = yield* (yield* ServiceViews).verify
    yield* emit(json, sweep, (s) =>
      s.services.length === 0
        ? "no service declares an endpoint"
        : table(
            ["TARGET", "SERVICE", "ENDPOINT", "EVIDENCE", "PROBES"],
            s.services.map((r) => [
              r.target,
              r.name,
              r.url,
              r.endpoint,
              r.probes.map((p) => `${p.from}:${p.result}`).join(" ")
            ])
          )
    )
    // A check: every endpoint observed, or a non-zero exit.
    if (sweep.services.some((s) => s.endpoint !== "observed")) return yield* new ExitWith({ code: 1 })
  }).pipe(Effect.catchTags({ FleetRegistryUnavailable: failWith(json), FleetRegistryInvalid: failWith(json) }))

export const show = ({ here, json, name, target }: Parsed<typeof showConfig>) =>
  Effect.gen(function* () {
    if (here) return yield* hereAnswer(json, hereVerb("show", name, target))
    const reconciler = yield* ServiceReconciler
    const found = yield* reconciler.declared(name, Option.getOrUndefined(target))
    const state = yield* (yield* HostUnits)
      .inspect(found.target, { name, unit: found.service.unit, program: found.service.program })
      .pipe(Effect.either)
    const last = yield* reconciler.latest
    const row = last?.services.find((s) => s.target === found.target.name && s.name === name) ?? null
    const shown = {
      target: found.target.name,
      declaration: found.service,
      state: state._tag === "Right" ? state.right : null,
      state_error: state._tag === "Left" ? state.left.detail : null,
      last_run: row === null ? null : { run_id: last?.run_id ?? null, ...row }
    }
    yield* emit(json, shown, (s) =>
      [
        `${s.target}/${name}: ${s.declaration.unit}${s.declaration.program ? ` runs ${s.declaration.program} ${s.declaration.args.join(" ")}` : " (no program declared)"}`,
        s.state === null
          ? `  host: ${s.state_error}`
          : `  host: ${s.state.load_state ?? "?"}/${s.state.active_state ?? "?"}${s.state.main_pid ? ` pid ${s.state.main_pid}` : ""}${s.state.process?.executable ? ` running ${s.state.process.executable}` : ""}`,
        s.last_run === null
          ? "  last run: none"
          : `  last run: ${s.last_run.decision.state} → ${s.last_run.decision.action} (${s.last_run.execution.status})`
      ].join("\n")
    )
  }).pipe(
    Effect.catchTags({
      UnknownService: failWith(json),
      FleetRegistryUnavailable: failWith(json),
      FleetRegistryInvalid: failWith(json)
    })
  )

export const converge = ({ apply, json, name, target }: Parsed<typeof convergeConfig>) =>
  Effect.gen(function* () {
    const report = yield* (yield* ServiceReconciler).converge(target, name, apply)
    yield* emit(json, report, (r) => r.services.map(describeRow).join("\n"))
    if (runFailed(report) || report.services.some((s) => s.execution.status === "refused"))
      return yield* new ExitWith({ code: 1 })
  }).pipe(
    Effect.catchTags({
      UnknownService: failWith(json),
      FleetRegistryUnavailable: failWith(json),
      FleetRegistryInvalid: failWith(json)
    })
  )

export const repair = (
  verb: "ensure" | "kick" | "reassert",
  {
    here,
    json,
    name,
    target
  }: { readonly here: boolean; readonly json: boolean; readonly name: string; readonly target: Option.Option<string> }
) =>
  Effect.gen(function* () {
    if (here) return yield* hereAnswer(json, hereVerb(verb, name, target))
    const outcome = yield* (yield* ServiceReconciler).operate(verb, name, Option.getOrUndefined(target)).pipe(
      Effect.mapError((error) =>
        "detail" in error
          ? {
              code: errorCode(error),
              _tag: error._tag,
              detail: String(error.detail),
              command: "command" in error ? String(error.command) : undefined
            }
          : { code: "FAILED", _tag: "Failed", detail: String(error) }
      ),
      Effect.either
    )
    if (outcome._tag === "Left") {
      const { _tag, code, command, detail } = outcome.left
      yield* emit(
        json,
        { ok: false, error: { code, _tag, ...(command === undefined ? {} : { command }), detail } },
        (a) => `${a.error._tag}: ${a.error.detail}`
      )
      return yield* new ExitWith({ code: 1 })
    }
    yield* emit(
      json,
      { ok: true, ...outcome.right },
      (o) =>
        `${o.target}/${o.name}: ${o.change} (${o.state.active_state ?? "?"}${o.state.main_pid ? `, pid ${o.state.main_pid}` : ""})`
    )
  })
