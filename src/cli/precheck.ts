import { Args, Command, Options } from "@effect/cli"
import { PrecheckRunnerLive, RunnerUnitLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/precheck.js"))

const targetArg = Args.text({ name: "TARGET" }).pipe(Args.withDescription("The registry target that runs the runner"))

const lifecycle = (verb: "install" | "remove", description: string) =>
  Command.make(verb, { target: targetArg, json }, (args) => impl((m) => m.lifecycle(verb, args))).pipe(
    Command.withDescription(description)
  )

export const statusConfig = { target: targetArg, json }

const status = Command.make("status", statusConfig, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription(
    "The runner's layout by stat, its firewall (re-asserted when gone), its service and its labels at the provider; exit 1 on any deviation"
  )
)

export const repositoryAddConfig = {
  repository: Args.text({ name: "REPOSITORY" }).pipe(Args.withDescription("A public repository, owner/name")),
  json
}

const repositoryAdd = Command.make("repository-add", repositoryAddConfig, (args) =>
  impl((m) => m.repositoryAdd(args))
).pipe(
  Command.withDescription("Admit a named public repository to the pre-check runners (the registry, compare-and-set)")
)

const here = Options.boolean("here").pipe(Options.withDescription("On this host (how the lifecycle calls it)"))

export const unitConfig = {
  verb: Args.choice([
    ["ensure", "ensure"],
    ["remove", "remove"],
    ["show", "show"]
  ] as const).pipe(Args.withDescription("ensure | remove | show")),
  target: targetArg,
  here,
  json
}

const unit = Command.make("unit", unitConfig, (args) => impl((m) => m.unit(args))).pipe(
  Command.withDescription(
    "The runner's unit, and its gateway's, through this host's service manager (run by the lifecycle, --here)"
  )
)

export const sudoersConfig = {
  user: Options.text("user").pipe(Options.withDescription("The channel's (non-root) user on the host")),
  ctl: Options.text("ctl").pipe(
    Options.withDefault("/usr/local/bin/ctl"),
    Options.withDescription("The ctl command on the host (KEEL_REMOTE_CTL there)")
  )
}

const sudoers = Command.make("sudoers", sudoersConfig, (args) => impl((m) => m.sudoers(args))).pipe(
  Command.withDescription("Print the sudoers drop-in a non-root channel user needs (check it with visudo -c)")
)

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
