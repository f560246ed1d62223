import { Args, Command, Options } from "@effect/cli"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/recover.js"))

export const recoverConfig = {
  target: Args.text({ name: "TARGET" }),
  release: Options.text("release").pipe(
    Options.optional,
    Options.withDescription("The exact version whose signed binary to install (without it: no binary change)")
  ),
  bundledRegistry: Options.boolean("bundled-registry").pipe(
    Options.withDescription("Use the registry bundled with this package instead of the last valid snapshot")
  ),
  json
}

/**
 * `ctl host recover TARGET [--release VERSION] [--bundled-registry] [--json]` (docs/releases.md, "Binary
 * recovery"): the exact signed release's binary installed through the raw host channel, probed, rolled back on a
 * failed probe; then the host recovery. Exit 1 unless every step held.
 */
export const recover = Command.make("recover", recoverConfig, (args) => impl((m) => m.recover(args))).pipe(
  Command.withDescription("Recover a host: the tool's binary from an exact signed release, then its recovery units")
)

export const releaseConfig = {
  target: Args.text({ name: "TARGET" }),
  binary: Options.text("binary").pipe(Options.withDescription("The managed binary (targets[].binaries[].name)")),
  // Spelled --version on the command line (ctlMain passes it on under this name: the root owns --version).
  version: Options.text("exact-version").pipe(
    Options.withDescription("The exact version to deliver (also accepted as --version)")
  ),
  json
}

/**
 * `ctl host release TARGET --binary NAME --version VERSION [--json]` (docs/releases.md, "Routine delivery"): the
 * same verified install as recovery — download, verify, backup, install, probe, rollback — for any managed binary,
 * without the host recovery.
 */
export const release = Command.make("release", releaseConfig, (args) => impl((m) => m.release(args))).pipe(
  Command.withDescription("Deliver an exact signed release of a managed binary to a host (verify, install, probe)")
)

export const declareVersionConfig = {
  target: Args.text({ name: "TARGET" }),
  binary: Args.text({ name: "BINARY" }),
  version: Args.text({ name: "VERSION" }),
  json
}

/** `ctl host declare-version TARGET BINARY VERSION [--json]`: the host's declared version, written to the registry. */
export const declareVersion = Command.make("declare-version", declareVersionConfig, (args) =>
  impl((m) => m.declareVersion(args))
).pipe(
  Command.withDescription("Declare the version of a managed binary for a host (a registry write, compare-and-set)")
)
