import { Args, Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { PrecheckRunnerLive, RunnerUnitLive } from "../layers/Live.js"
import { type LifecycleReport, PrecheckRunner, type StatusReport } from "../services/fleet/runners/PrecheckRunner.js"
import { renderSudoers, sudoersProblem } from "../services/fleet/runners/RunnerRender.js"
import { BOOTSTRAP } from "../services/fleet/runners/RunnerScripts.js"
import { RunnerUnit } from "../services/fleet/runners/RunnerUnit.js"
import { CommandFailed, ExitWith, emit, failWith, json, table } from "./Output.js"

const targetArg = Args.text({ name: "TARGET" }).pipe(Args.withDescription("The registry target that runs the runner"))

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

const lifecycle = (verb: "install" | "remove", description: string) =>
  Command.make(verb, { target: targetArg, json }, ({ json, target }) =>
    Effect.gen(function* () {
      const runner = yield* PrecheckRunner
      const report = yield* (verb === "install" ? runner.install(target) : runner.remove(target)).pipe(
        Effect.catchAll(failWith(json))
      )
      yield* emit(json, report, describeSteps)
      if (!report.ok) return yield* new ExitWith({ code: 1 })
    })
  ).pipe(Command.withDescription(description))

const describeStatus = (status: StatusReport) =>
  [
    `${status.target}/${status.runner}: ${status.ok ? "ok" : `${status.deviations.length} deviation(s)`}`,
    `account: ${status.account === null ? "missing" : `${status.account.name} (uid ${status.account.uid})`}`,
    `provider: ${status.provider === null ? "not registered" : `id ${status.provider.id}, ${status.provider.status}${status.provider.busy ? ", busy" : ""}, labels ${status.provider.labels.join(", ")}`}`,
    `firewall: ${status.firewall.table ?? "not loaded"}${status.firewall.reasserted ? " (re-asserted now)" : ""}`,
    `gateway: ${status.gateway_url ?? "-"}  agent: ${status.agent_id ?? "-"}`,
    ...status.deviations.map((d) => `  - ${d}`)
  ].join("\n")

const status = Command.make("status", { target: targetArg, json }, ({ json, target }) =>
  Effect.gen(function* () {
    const report = yield* (yield* PrecheckRunner).status(target).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, report, describeStatus)
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })
).pipe(
  Command.withDescription(
    "The runner's layout by stat, its firewall (re-asserted when gone), its service and its labels at the provider; exit 1 on any deviation"
  )
)

const repositoryAdd = Command.make(
  "repository-add",
  { repository: Args.text({ name: "REPOSITORY" }).pipe(Args.withDescription("A public repository, owner/name")), json },
  ({ json, repository }) =>
    Effect.gen(function* () {
      const answer = yield* (yield* PrecheckRunner).repositoryAdd(repository).pipe(Effect.catchAll(failWith(json)))
      yield* emit(
        json,
        answer,
        (a) =>
          `${a.repository}: ${a.change === "added" ? "admitted" : "already admitted"}${a.targets.length > 0 ? ` (runners: ${a.targets.join(", ")}; install again to grant it)` : ""}\nIts workflows must carry this guard:\n${a.guard}`
      )
    })
).pipe(
  Command.withDescription("Admit a named public repository to the pre-check runners (the registry, compare-and-set)")
)

const here = Options.boolean("here").pipe(Options.withDescription("On this host (how the lifecycle calls it)"))

const unit = Command.make(
  "unit",
  {
    verb: Args.choice([
      ["ensure", "ensure"],
      ["remove", "remove"],
      ["show", "show"]
    ] as const).pipe(Args.withDescription("ensure | remove | show")),
    target: targetArg,
    here,
    json
  },
  ({ json, target, verb }) =>
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
).pipe(
  Command.withDescription(
    "The runner's unit, and its gateway's, through this host's service manager (run by the lifecycle, --here)"
  )
)

const sudoers = Command.make(
  "sudoers",
  {
    user: Options.text("user").pipe(Options.withDescription("The channel's (non-root) user on the host")),
    ctl: Options.text("ctl").pipe(
      Options.withDefault("/usr/local/bin/ctl"),
      Options.withDescription("The ctl command on the host (KEEL_REMOTE_CTL there)")
    )
  },
  ({ ctl, user }) =>
    Effect.gen(function* () {
      const command = ctl.split(" ").filter((w) => w.length > 0)
      const problem = sudoersProblem(user, command)
      if (problem !== undefined) return yield* new CommandFailed({ detail: problem })
      yield* emit(false, renderSudoers(user, BOOTSTRAP, command), (text) => text.trimEnd())
    })
).pipe(Command.withDescription("Print the sudoers drop-in a non-root channel user needs (check it with visudo -c)"))

export const precheckRunner = Command.make("precheck-runner").pipe(
  Command.withDescription("Pre-check runners: install, status, remove, repository-add (docs/runners.md)"),
  Command.withSubcommands([
    lifecycle(
      "install",
      "Install the target's pre-check runner: token exchange, pinned archive, account, hooks, firewall, service, labels"
    ).pipe(Command.provide(PrecheckRunnerLive)),
    status.pipe(Command.provide(PrecheckRunnerLive)),
    lifecycle(
      "remove",
      "Remove the target's pre-check runner: unregister, service, firewall, files, account — each verified gone"
    ).pipe(Command.provide(PrecheckRunnerLive)),
    repositoryAdd.pipe(Command.provide(PrecheckRunnerLive)),
    unit.pipe(Command.provide(RunnerUnitLive)),
    sudoers
  ])
)
