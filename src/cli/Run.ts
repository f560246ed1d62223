import { ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Cause, ConfigError, Console, Effect, Exit, Layer, Option } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { loggerFromConfig } from "../services/platform/Logging.js"
import { runCtl } from "./Cli.js"
import { ExitWith } from "./Output.js"

/** Exit codes: 0 ok (and a clean shutdown on SIGTERM/SIGINT), 1 failure, 2 usage. */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof ExitWith) return failure.value.code
  return Option.isSome(failure) && ValidationError.isValidationError(failure.value) ? 2 : 1
}

/** One line on stderr for failures the CLI did not already explain (usage errors print their own help). */
const report = (cause: Cause.Cause<unknown>) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (ValidationError.isValidationError(error) || error instanceof ExitWith) return Effect.void
    if (ConfigError.isConfigError(error)) return Console.error(`ctl: invalid configuration: ${String(error)}`)
    const detail =
      typeof error === "object" && error !== null && "detail" in error
        ? String((error as { detail: unknown }).detail)
        : typeof error === "object" && error !== null && "message" in error
          ? String((error as { message: unknown }).message)
          : String(error)
    return Console.error(`ctl: ${detail}`)
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  return Console.error(`ctl: unexpected failure\n${Cause.pretty(cause)}`)
}

const MainLive = Layer.mergeAll(NodeContext.layer, loggerFromConfig.pipe(Layer.provide(AppConfig.Default)))

export const ctlMain = (argv: ReadonlyArray<string>) =>
  runCtl(argv).pipe(Effect.provide(MainLive), Effect.tapErrorCause(report))
