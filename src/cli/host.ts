import { Args, Command, Options } from "@effect/cli"
import { AppConfig } from "../services/platform/AppConfig.js"
import { gateway } from "./gateway.js"
import { storageRootReconcile } from "./handoff.js"
import { FleetConfigLive, FleetServicesLive, HostOpsLive, HostStateLive, RecoveryLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { integerOption, json } from "./Output.js"
import { precheckRunner } from "./precheck.js"
import { declareVersion, recover, release } from "./recover.js"

const impl = lazyRun(() => import("./run/host.js"))

const hostOption = Options.text("host").pipe(
  Options.optional,
  Options.withDescription("The registry target this host is (default: KEEL_HOST, then the hostname)")
)
const bundledRegistry = Options.boolean("bundled-registry").pipe(
  Options.withDescription("Use the registry shipped inside the package")
)

export const writeConfig = {
  out: Options.file("out").pipe(Options.optional, Options.withDescription("Write here (atomically) instead of stdout")),
  host: hostOption,
  bundledRegistry
}

const write = Command.make("write", writeConfig, (args) => impl((m) => m.write(args))).pipe(
  Command.withDescription("Collect this host's disk and unit state into a beacon document")
)

export const installConfig = {
  print: Options.boolean("print").pipe(Options.withDescription("Print the rendered units instead of writing them")),
  dir: Options.directory("dir").pipe(Options.optional, Options.withDescription("Write the rendered files here")),
  os: Options.choice("os", ["linux", "darwin"]).pipe(Options.optional),
  ctlCommand: Options.text("ctl").pipe(
    Options.withDefault("/usr/local/bin/ctl"),
    Options.withDescription("The ctl command the units run (absolute)")
  ),
  beaconFile: Options.text("beacon-file").pipe(Options.withDefault("/var/lib/keel/beacon.json")),
  envFile: Options.text("routing-file").pipe(Options.withDefault("/etc/keel/beacon.env")),
  interval: integerOption("interval", 1, 86_400).pipe(
    Options.withDefault(300),
    Options.withDescription("Seconds between beacons")
  ),
  user: Options.text("user").pipe(
    Options.optional,
    Options.withDescription("The account the units run as (default keel)")
  ),
  group: Options.text("group").pipe(Options.optional),
  controlPlaneUrl: Options.text("control-plane-url").pipe(Options.withDefault("https://control.example.internal")),
  vaultUrl: Options.text("vault-url").pipe(Options.withDefault("https://control.example.internal")),
  consumer: Options.text("consumer").pipe(
    Options.optional,
    Options.withDescription("The vault consumer of the beacon grant (default beacon-<this host>)")
  ),
  grantFile: Options.text("grant-file").pipe(Options.withDefault("/etc/keel/beacon-grant.json")),
  stateGrantFile: Options.text("state-grant-file").pipe(
    Options.optional,
    Options.withDescription(
      "A grant with host-state-write for this host: each run then also publishes its capacity and janitor report"
    )
  )
}

const install = Command.make("install", installConfig, (args) => impl((m) => m.install(args))).pipe(
  Command.withDescription("Render the beacon's systemd service + timer (Linux) or launchd plist (macOS)")
)

export const publishConfig = {
  file: Args.file({ name: "FILE" }),
  envFile: Options.file("routing-file").pipe(
    Options.optional,
    Options.withDescription("Routing KEY=value lines (the units' EnvironmentFile); the environment wins")
  ),
  json
}

const publish = Command.make("publish-beacon", publishConfig, (args) => impl((m) => m.publish(args))).pipe(
  Command.withDescription("Exchange the beacon grant for a token and PUT the beacon to the control plane")
)

const publishState = Command.make("publish-state", { json }, (args) => impl((m) => m.publishState(args))).pipe(
  Command.withDescription(
    "Measure this host's capacity, take its janitor's last pass, and PUT both through the control plane's object API"
  )
)

export const execConfig = {
  target: Args.text({ name: "TARGET" }),
  command: Args.text({ name: "COMMAND" }).pipe(Args.atLeast(1)),
  timeout: integerOption("timeout", 1, 86_400).pipe(Options.withDefault(600), Options.withDescription("Seconds")),
  stdin: Options.boolean("stdin").pipe(
    Options.withDescription("Forward this process's standard input to the command (read to its end first)")
  )
}

const exec = Command.make("exec", execConfig, (args) => impl((m) => m.exec(args))).pipe(
  Command.withDescription(
    "Run a command on a target: ctl host exec [--stdin] [--timeout S] TARGET -- ARGV… (options before --); exits with its exit code"
  )
)

export const healthConfig = { target: Args.text({ name: "TARGET" }), json }

const health = Command.make("health", healthConfig, (args) => impl((m) => m.health(args))).pipe(
  Command.withDescription("The host's state now: disks and declared units, read on the host")
)

export const inventoryConfig = { target: Args.text({ name: "TARGET" }), json }

const inventory = Command.make("inventory", inventoryConfig, (args) => impl((m) => m.inventory(args))).pipe(
  Command.withDescription("What the host is: kernel, roles, tool version, disks, units")
)

export const gatesConfig = { target: Args.text({ name: "HOST" }), json }

const gates = Command.make("gates", gatesConfig, (args) => impl((m) => m.gates(args))).pipe(
  Command.withDescription("Why the host does or does not admit work; exit 1 when the diagnostic is incomplete")
)

export const clearConfig = { target: Args.text({ name: "TARGET" }), json }

const clear = Command.make("clear", clearConfig, (args) => impl((m) => m.clear(args))).pipe(
  Command.withDescription(
    "Remove a host's stored beacon on this control plane (a bad one: a wrong clock, a wrong host)"
  )
)

export const host = Command.make("host").pipe(
  Command.withDescription("Fleet hosts: beacons, remote commands, health and inventory"),
  Command.withSubcommands([
    Command.make("beacon").pipe(
      Command.withDescription("Write a beacon, or render the units that publish it"),
      Command.withSubcommands([
        write.pipe(Command.provide(FleetServicesLive)),
        install.pipe(Command.provide(AppConfig.Default)),
        clear.pipe(Command.provide(FleetServicesLive))
      ])
    ),
    publish.pipe(Command.provide(FleetConfigLive)),
    publishState.pipe(Command.provide(HostStateLive)),
    exec.pipe(Command.provide(HostOpsLive)),
    health.pipe(Command.provide(HostOpsLive)),
    inventory.pipe(Command.provide(HostOpsLive)),
    gates.pipe(Command.provide(HostOpsLive)),
    storageRootReconcile.pipe(Command.provide(FleetConfigLive)),
    recover.pipe(Command.provide(RecoveryLive)),
    release.pipe(Command.provide(RecoveryLive)),
    declareVersion.pipe(Command.provide(FleetServicesLive)),
    precheckRunner,
    gateway
  ])
)
// Options are named --routing-file, not --env-file: Node 20 scans the whole argv for --env-file.
