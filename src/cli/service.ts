import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect, Option } from "effect"
import { ReconcilerOpsLive } from "../layers/Live.js"
import { probeUrl } from "../services/fleet/HostAgentLocal.js"
import { beaconEnsureRefusal } from "../services/fleet/reconciler/Decision.js"
import { HostUnits } from "../services/fleet/reconciler/HostUnits.js"
import { ServiceReconciler } from "../services/fleet/reconciler/ServiceReconciler.js"
import type { ServiceReport, ServiceRow } from "../services/fleet/reconciler/ServiceReport.js"
import { ServiceViews } from "../services/fleet/reconciler/ServiceViews.js"
import { ServiceManager } from "../services/fleet/units/ServiceManager.js"
import { renderUnit, unrenderable } from "../services/fleet/units/UnitRender.js"
import { thisHostName } from "../services/platform/AppConfig.js"
import { CommandFailed, ExitWith, emit, errorCode, failWith, json, table } from "./Output.js"

const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("The service's name in the registry"))
const targetOption = Options.text("target").pipe(
  Options.optional,
  Options.withDescription("The target declaring the service (needed when several declare one of that name)")
)
const here = Options.boolean("here").pipe(
  Options.withDescription(
    "Act on this host's service manager (how the control plane reaches a host through its channel)"
  )
)

/** A `--here` answer: what the control plane's HostUnits reads back from the host's `ctl`. */
const hereAnswer = <A extends object, E extends { readonly _tag: string; readonly detail: string }, R>(
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

const hereVerb = (verb: "show" | "ensure" | "kick" | "reassert", service: string, target: Option.Option<string>) =>
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

const list = Command.make("list", { json }, ({ json }) =>
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
).pipe(Command.withDescription("Declared services and their state in the latest reconciliation run"))

const url = Options.text("url").pipe(
  Options.mapEffect((text) => {
    const parsed = URL.canParse(text) ? new URL(text) : undefined
    return parsed !== undefined && (parsed.protocol === "http:" || parsed.protocol === "https:")
      ? Effect.succeed(text)
      : Effect.fail(
          ValidationError.invalidValue(HelpDoc.p("--url: expected an http(s) URL such as http://127.0.0.1:8080/health"))
        )
  }),
  Options.optional,
  Options.withDescription("With --here: the endpoint to probe from this host")
)

const verify = Command.make("verify", { json, here, url }, ({ here, json, url }) =>
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
).pipe(
  Command.withDescription("Probe every declared endpoint from its consumer hosts now (exit 1 unless all are observed)")
)

const show = Command.make("show", { name, target: targetOption, here, json }, ({ here, json, name, target }) =>
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
).pipe(Command.withDescription("A service's declaration, its unit as the host reports it now, and its last decision"))

const repair = (verb: "ensure" | "kick" | "reassert", description: string) =>
  Command.make(verb, { name, target: targetOption, here, json }, ({ here, json, name, target }) =>
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
  ).pipe(Command.withDescription(description))

const apply = Options.boolean("apply").pipe(Options.withDescription("Execute the decision (without it, only show it)"))
const targetArg = Args.text({ name: "TARGET" }).pipe(Args.withDescription("The registry target"))

/** A one-line account of a row: what was found, decided and done. */
export const describeRow = (row: ServiceRow) =>
  `${row.target}/${row.name}: ${row.decision.state} → ${row.decision.action} (${row.execution.status}${row.execution.skipped_because ? `: ${row.execution.skipped_because}` : ""}${row.execution.change ? `: ${row.execution.change}` : ""}${row.execution.error ? `: ${row.execution.error}` : ""}) — ${row.decision.reason}`

/** Whether a run ended with a failed execution (the command's exit status). */
export const runFailed = (report: ServiceReport) => report.services.some((s) => s.execution.status === "failed")

const converge = Command.make("converge", { target: targetArg, name, apply, json }, ({ apply, json, name, target }) =>
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
).pipe(
  Command.withDescription("Decide one service from fresh evidence; --apply executes the decision (under its lease)")
)

export const service = Command.make("service").pipe(
  Command.withDescription("Declared services: their state, endpoint checks, and repairs on their hosts"),
  Command.withSubcommands([
    list,
    verify,
    show,
    repair(
      "ensure",
      "Install or repair the service's unit on its host: create, restart in place, or reload after a preflight"
    ),
    repair("kick", "Restart the service's process onto the binary on disk"),
    repair("reassert", "Enable and start a oneshot's timer (the beacon's repair)"),
    converge
  ]),
  Command.provide(ReconcilerOpsLive)
)
