import { Effect, Schema } from "effect"
import { RunnerUnitOperation, type RunnerUnitVerb } from "../../../../contracts/fleet/HostAgent.js"
import { HostChannel } from "../../../platform/hostchannel/HostChannel.js"
import { redactValues } from "../../../platform/Redact.js"
import type { Target } from "../../shared/registry/Schema.js"
import { RemoteCtl } from "../RemoteCtl.js"
import { BOOTSTRAP, bootstrapInput, parseScriptOutput } from "./RunnerScripts.js"

/** The runner's lifecycle cannot run on its host (no root there, the channel failed): nothing changed. */
export class RunnerHostUnavailable extends Schema.TaggedError<RunnerHostUnavailable>()("RunnerHostUnavailable", {
  code: Schema.Literal("RUNNER_HOST_UNAVAILABLE"),
  target: Schema.String,
  detail: Schema.String
}) {}

/** How long one lifecycle script may run on the host (the archive download included). */
const SCRIPT_TIMEOUT_MS = 15 * 60_000

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

/** Every secret value replaced, so nothing a host printed can carry one further (logs, answers, errors). */
export const redact = (value: string, secrets: ReadonlyArray<string>) =>
  redactValues(
    value,
    secrets.filter((s) => s.length >= 4)
  )

/**
 * A pre-check runner's host, as the lifecycle reaches it: root scripts through the target's channel (as root, or
 * through `sudo -n` when the channel's user is not root; docs/runners.md), with their secrets on stdin, and the
 * runner's unit through `ctl host precheck-runner unit … --here` on the host (its own service manager).
 */
export class RunnerHost extends Effect.Service<RunnerHost>()("fleet/RunnerHost", {
  effect: Effect.gen(function* () {
    const channel = yield* HostChannel
    const remote = yield* RemoteCtl

    /** Whether the channel's user is root; otherwise each root command goes through `sudo -n`. */
    const asRoot = (target: Target) =>
      target.channel === "local" ? process.getuid?.() === 0 : target.channel.ssh.user === "root"
    const elevate = (target: Target, argv: ReadonlyArray<string>) => (asRoot(target) ? argv : ["sudo", "-n", ...argv])

    const unavailable = (target: Target, detail: string) =>
      new RunnerHostUnavailable({ code: "RUNNER_HOST_UNAVAILABLE", target: target.name, detail })

    /** Runs a lifecycle script; its output comes back parsed and redacted. */
    const script = (
      target: Target,
      body: string,
      secrets: { readonly token?: string; readonly signingSecret?: string } = {}
    ) =>
      Effect.gen(function* () {
        const hidden = [secrets.token ?? "", secrets.signingSecret ?? ""]
        const result = yield* channel
          .run(remote.spec(target), {
            argv: elevate(target, BOOTSTRAP),
            stdin: bootstrapInput(body, secrets),
            timeoutMs: SCRIPT_TIMEOUT_MS
          })
          .pipe(Effect.mapError((error) => unavailable(target, redact(error.detail, hidden))))
        const stdout = redact(text(result.stdout), hidden)
        const stderr = redact(text(result.stderr), hidden).trim()
        if (/a password is required|sudo: .*not allowed|sudo: command not found|sudo: not found/.test(stderr))
          return yield* unavailable(
            target,
            `the channel's user is not root and sudo -n is refused (${stderr.split("\n")[0]}); docs/runners.md renders the sudoers drop-in`
          )
        const parsed = parseScriptOutput(stdout)
        if (result.timedOut)
          return yield* unavailable(target, `the script did not finish within ${SCRIPT_TIMEOUT_MS / 60_000} min`)
        if (parsed.steps.length === 0)
          return yield* unavailable(
            target,
            `the script reported nothing (exit ${result.exitCode ?? "killed"}): ${stderr.split("\n").slice(-3).join(" ")}`
          )
        // A script that stopped without saying why (a shell error) still ends in a failed step.
        const steps =
          result.exitCode !== 0 && !parsed.steps.some((s) => s.result === "failed")
            ? [
                ...parsed.steps,
                {
                  step: "host",
                  result: "failed",
                  detail: `the script exited ${result.exitCode ?? "killed"}: ${stderr.split("\n").slice(-3).join(" ")}`
                }
              ]
            : parsed.steps
        return { ...parsed, steps, exitCode: result.exitCode, stderr }
      })

    /** `ctl host precheck-runner unit <verb> <target> --here --json` on the host, as root. */
    const unit = (target: Target, verb: RunnerUnitVerb) =>
      remote
        .call(target, RunnerUnitOperation, { verb, target: target.name }, { sudo: !asRoot(target) })
        .pipe(Effect.mapError((error) => unavailable(target, error.detail)))

    return { script, unit } as const
  })
}) {}
