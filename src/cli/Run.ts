import { ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Cause, ConfigError, Console, Effect, Exit, Layer, Option } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { loggerFromConfig } from "../services/platform/Logging.js"
import { ctl, runCtl } from "./Cli.js"
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

interface CommandNode {
  readonly name: string
  readonly children: ReadonlyMap<string, CommandNode> | undefined
}

type Descriptor = {
  readonly _tag: string
  readonly name?: string
  readonly command?: Descriptor
  readonly parent?: Descriptor
  readonly children?: ReadonlyArray<Descriptor>
}

/** The command tree as names: groups with their subcommands, leaves without. */
const treeOf = (descriptor: Descriptor): CommandNode => {
  if (descriptor._tag === "Map" && descriptor.command !== undefined) return treeOf(descriptor.command)
  if (descriptor._tag === "Subcommands" && descriptor.parent !== undefined) {
    const parent = treeOf(descriptor.parent)
    const children = new Map((descriptor.children ?? []).map((child) => [treeOf(child).name, treeOf(child)] as const))
    return { name: parent.name, children }
  }
  return { name: descriptor.name ?? "", children: undefined }
}

/** Root options of @effect/cli that take a value (the value is not a command name). */
const ROOT_OPTIONS_WITH_VALUE = new Set(["--completions", "--log-level"])

/**
 * An unknown command anywhere in the path (`ctl nosuch`, `ctl market nosuch --help`) is a usage error,
 * whatever else is on the line: @effect/cli would answer `--help` for the nearest known group and exit 0.
 */
export const unknownCommand = (args: ReadonlyArray<string>): string | undefined => {
  let node = treeOf((ctl as unknown as { descriptor: Descriptor }).descriptor)
  const path = ["ctl"]
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") return undefined
    if (arg.startsWith("-")) {
      if (path.length === 1 && ROOT_OPTIONS_WITH_VALUE.has(arg)) i++
      continue
    }
    if (node.children === undefined) return undefined
    const next = node.children.get(arg)
    if (next === undefined)
      return `unknown command '${arg}' for '${path.join(" ")}' (one of: ${[...node.children.keys()].sort().join(", ")})`
    node = next
    path.push(arg)
  }
  return undefined
}

const MainLive = Layer.mergeAll(NodeContext.layer, loggerFromConfig.pipe(Layer.provide(AppConfig.Default)))

export const ctlMain = (argv: ReadonlyArray<string>) => {
  const unknown = unknownCommand(argv.slice(2))
  if (unknown !== undefined)
    return Console.error(`ctl: ${unknown}`).pipe(Effect.zipRight(Effect.fail(new ExitWith({ code: 2 }))))
  return runCtl(argv).pipe(Effect.provide(MainLive), Effect.tapErrorCause(report))
}
