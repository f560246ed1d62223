import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { BinaryRecovery, type RecoveryAnswer } from "../services/fleet/releases/BinaryRecovery.js"
import { VersionDeclaration } from "../services/fleet/releases/VersionDeclaration.js"
import { ExitWith, emit, failWith, json } from "./Output.js"

const view = (answer: RecoveryAnswer) =>
  [
    `${answer.target}${answer.release === null ? "" : ` ← ${answer.release.product} ${answer.release.version}`}: ${answer.ok ? "recovered" : "FAILED"}${answer.rolled_back ? " (rolled back)" : ""}`,
    `  registry    ${answer.registry.freshness} ${answer.registry.digest.slice(0, 12)}`,
    `  object API  ${answer.object_api.status}${answer.object_api.detail === "" ? "" : ` — ${answer.object_api.detail}`}`,
    ...answer.steps.map((s) => `  ${s.ok ? "✓" : "✗"} ${s.step.padEnd(9)} ${s.detail}`)
  ].join("\n")

/**
 * `ctl host recover TARGET [--release VERSION] [--bundled-registry] [--json]` (docs/releases.md, "Binary
 * recovery"): the exact signed release's binary installed through the raw host channel, probed, rolled back on a
 * failed probe; then the host recovery. Exit 1 unless every step held.
 */
export const recover = Command.make(
  "recover",
  {
    target: Args.text({ name: "TARGET" }),
    release: Options.text("release").pipe(
      Options.optional,
      Options.withDescription("The exact version whose signed binary to install (without it: no binary change)")
    ),
    bundledRegistry: Options.boolean("bundled-registry").pipe(
      Options.withDescription("Use the registry bundled with this package instead of the last valid snapshot")
    ),
    json
  },
  ({ bundledRegistry, json, release, target }) =>
    Effect.gen(function* () {
      const answer = yield* (yield* BinaryRecovery)
        .recover({ target, release, bundledRegistry })
        .pipe(Effect.catchTag("RecoveryRefused", failWith(json)))
      yield* emit(json, answer, view)
      if (!answer.ok) return yield* new ExitWith({ code: 1 })
    })
).pipe(
  Command.withDescription("Recover a host: the tool's binary from an exact signed release, then its recovery units")
)

/**
 * `ctl host release TARGET --binary NAME --version VERSION [--json]` (docs/releases.md, "Routine delivery"): the
 * same verified install as recovery — download, verify, backup, install, probe, rollback — for any managed binary,
 * without the host recovery.
 */
export const release = Command.make(
  "release",
  {
    target: Args.text({ name: "TARGET" }),
    binary: Options.text("binary").pipe(Options.withDescription("The managed binary (targets[].binaries[].name)")),
    // Spelled --version on the command line (ctlMain passes it on under this name: the root owns --version).
    version: Options.text("exact-version").pipe(
      Options.withDescription("The exact version to deliver (also accepted as --version)")
    ),
    json
  },
  ({ binary, json, target, version }) =>
    Effect.gen(function* () {
      const answer = yield* (yield* BinaryRecovery)
        .recover({ target, release: Option.some(version), bundledRegistry: false, binary, hostRecovery: false })
        .pipe(Effect.catchTag("RecoveryRefused", failWith(json)))
      yield* emit(json, answer, view)
      if (!answer.ok) return yield* new ExitWith({ code: 1 })
    })
).pipe(
  Command.withDescription("Deliver an exact signed release of a managed binary to a host (verify, install, probe)")
)

/** `ctl host declare-version TARGET BINARY VERSION [--json]`: the host's declared version, written to the registry. */
export const declareVersion = Command.make(
  "declare-version",
  {
    target: Args.text({ name: "TARGET" }),
    binary: Args.text({ name: "BINARY" }),
    version: Args.text({ name: "VERSION" }),
    json
  },
  ({ binary, json, target, version }) =>
    Effect.gen(function* () {
      const declared = yield* (yield* VersionDeclaration)
        .declare(target, binary, version)
        .pipe(Effect.catchTag("DeclareRefused", failWith(json)))
      yield* emit(
        json,
        declared,
        (d) =>
          `${d.target} ${d.binary}: ${d.previous ?? "(none)"} → ${d.version} (registry ${d.digest_before.slice(0, 12)} → ${d.digest_after.slice(0, 12)}, audit ${d.audit_key})`
      )
    })
).pipe(
  Command.withDescription("Declare the version of a managed binary for a host (a registry write, compare-and-set)")
)
