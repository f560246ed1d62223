import { Effect } from "effect"
import { RunnerUnit } from "../../services/fleet/agent/runners/RunnerUnit.js"
import {
  type LifecycleReport,
  PrecheckRunner,
  type StatusReport
} from "../../services/fleet/control/runners/PrecheckRunner.js"
import { BOOTSTRAP } from "../../services/fleet/control/runners/RunnerScripts.js"
import { renderSudoers, sudoersProblem } from "../../services/fleet/shared/runners/RunnerRender.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, ExitWith, emit, failWith, table } from "../Output.js"
import type { repositoryAddConfig, statusConfig, sudoersConfig, unitConfig } from "../precheck.js"

const describeStatus = (status: StatusReport) =>
  [
    `${status.target}/${status.runner}: ${status.ok ? "ok" : `${status.deviations.length} deviation(s)`}`,
    `account: ${status.account === null ? "missing" : `${status.account.name} (uid ${status.account.uid})`}`,
    `provider: ${status.provider === null ? "not registered" : `id ${status.provider.id}, ${status.provider.status}${status.provider.busy ? ", busy" : ""}, labels ${status.provider.labels.join(", ")}`}`,
    `firewall: ${status.firewall.table ?? "not loaded"}${status.firewall.reasserted ? " (re-asserted now)" : ""}`,
    `gateway: ${status.gateway_url ?? "-"}  agent: ${status.agent_id ?? "-"}`,
    ...status.deviations.map((d) => `  - ${d}`)
  ].join("\n")

export const status = ({ json, target }: Parsed<typeof statusConfig>) =>
  Effect.gen(function* () {
    const report = yield* (yield* PrecheckRunner).status(target).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, report, describeStatus)
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })

export const repositoryAdd = ({ json, repository }: Parsed<typeof repositoryAddConfig>) =>
  Effect.gen(function* () {
    const answer = yield* (yield* PrecheckRunner).repositoryAdd(repository).pipe(Effect.catchAll(failWith(json)))
    yield* emit(
      json,
      answer,
      (a) =>
        `${a.repository}: ${a.change === "added" ? "admitted" : "already admitted"}${a.targets.length > 0 ? ` (runners: ${a.targets.join(", ")}; install again to grant it)` : ""}\nIts workflows must carry this guard:\n${a.guard}`
    )
  })

export const unit = ({ json, target, verb }: Parsed<typeof unitConfig>) =>
  Effect.gen(function* () {
    const units = yield* RunnerUnit
    const outcome = yield* (
      verb === "ensure" ? units.ensure(target) : verb === "remove" ? units.remove(target) : units.show(target)
    ).pipe(Effect.either)
    if (outcome._tag === "Left") {
      const error = outcome.left
      yield* emit(json, { ok: false, error: { _tag: error._tag, detail: error.detail } }, (a) => a.error.detail)
      return yield* new ExitWith({ code: 1 })
    }
    yield* emit(json, { ok: true, units: outcome.right }, (a) =>
      a.units
        .map(
          (u) =>
            `${u.name}: ${u.change} (${u.state.active_state ?? "?"}${u.state.main_pid ? `, pid ${u.state.main_pid}` : ""})`
        )
        .join("\n")
    )
  })

export const sudoers = ({ ctl, user }: Parsed<typeof sudoersConfig>) =>
  Effect.gen(function* () {
    const command = ctl.split(" ").filter((w) => w.length > 0)
    const problem = sudoersProblem(user, command)
    if (problem !== undefined) return yield* new CommandFailed({ detail: problem })
    yield* emit(false, renderSudoers(user, BOOTSTRAP, command), (text) => text.trimEnd())
  })

const describeSteps = (report: LifecycleReport) =>
  [
    `${report.target}/${report.runner}: ${report.action} ${report.ok ? "done" : "FAILED"}`,
    table(
      ["STEP", "RESULT", "DETAIL"],
      report.steps.map((s) => [s.step, s.result, s.detail])
    ),
    ...(report.rollback === null
      ? []
      : [
          "rollback:",
          table(
            ["STEP", "RESULT", "DETAIL"],
            report.rollback.map((s) => [s.step, s.result, s.detail])
          )
        ]),
    ...(report.remains.length === 0 ? [] : [`remains: ${report.remains.join("; ")}`])
  ].join("\n")

export const lifecycle = (
  verb: "install" | "remove",
  { json, target }: { readonly json: boolean; readonly target: string }
) =>
  Effect.gen(function* () {
    const runner = yield* PrecheckRunner
    const report = yield* (verb === "install" ? runner.install(target) : runner.remove(target)).pipe(
      Effect.catchAll(failWith(json))
    )
    yield* emit(json, report, describeSteps)
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })
