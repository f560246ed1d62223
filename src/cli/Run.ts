import { HelpDoc, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, ConfigError, Console, Effect, Exit, Layer, Option } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { loggerFromConfig } from "../services/platform/Logging.js"
import { packageVersion } from "../services/platform/Package.js"
import { ctl, runCtl } from "./Cli.js"
import { type CommandNode, commandTree, groupHelp } from "./Help.js"
import { ExitWith, errorCode, forgetPrintedJson, jsonPrinted, printJson } from "./Output.js"

/** Exit codes: 0 ok (and a clean shutdown on SIGTERM/SIGINT), 1 failure, 2 usage. */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof ExitWith) return failure.value.code
  return Option.isSome(failure) && ValidationError.isValidationError(failure.value) ? 2 : 1
}

const textOf = (value: unknown, member: string) =>
  typeof value === "object" && value !== null && member in value
    ? String((value as Record<string, unknown>)[member])
    : ""

/**
 * A failure as one line: its `detail`, else its `message`, else what caused it (the platform's `ServeError`
 * carries no message of its own: `listen EADDRINUSE: address already in use 127.0.0.1:8080` is its cause's).
 */
export const failureLine = (error: unknown): string => {
  const own = textOf(error, "detail") || textOf(error, "message")
  if (own !== "") return own
  const cause = typeof error === "object" && error !== null ? (error as { cause?: unknown }).cause : undefined
  const caused = textOf(cause, "message")
  const tag = textOf(error, "_tag")
  if (caused !== "") return tag === "" ? caused : `${tag}: ${caused}`
  return typeof error === "object" && error !== null ? tag || "failed" : String(error)
}

/**
 * With `--json`, a failure that printed nothing on stdout yet still answers one document there:
 * `{"error": {"code", "detail"}}` (the error's own UPPER_SNAKE code, else its tag in that form).
 */
const jsonFailure = (error: unknown, asJson: boolean) => {
  if (!asJson || jsonPrinted()) return Effect.void
  return printJson({ error: { code: errorCode(error), detail: failureLine(error) } }, { compact: true })
}

/** One line on stderr for failures the CLI did not already explain (usage errors print their own help). */
const report = (cause: Cause.Cause<unknown>, asJson: boolean) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (ValidationError.isValidationError(error) || error instanceof ExitWith) return Effect.void
    if (ConfigError.isConfigError(error))
      return Effect.zipRight(
        jsonFailure({ code: "INVALID_CONFIGURATION", detail: `invalid configuration: ${String(error)}` }, asJson),
        Console.error(`ctl: invalid configuration: ${String(error)}`)
      )
    return Effect.zipRight(jsonFailure(error, asJson), Console.error(`ctl: ${failureLine(error)}`))
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  // A migration that failed at a layer's build is a defect there, yet an expected outcome here: one typed line.
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect) && textOf(defect.value, "_tag") === "MigrationFailed")
    return Effect.zipRight(jsonFailure(defect.value, asJson), Console.error(`ctl: ${failureLine(defect.value)}`))
  return Console.error(`ctl: unexpected failure\n${Cause.pretty(cause)}`)
}

/** Root options of @effect/cli that take a value (the value is not a command name). */
const ROOT_OPTIONS_WITH_VALUE = new Set(["--completions", "--log-level"])

/**
 * An unknown command anywhere in the path (`ctl nosuch`, `ctl market nosuch --help`) is a usage error,
 * whatever else is on the line: @effect/cli would answer `--help` for the nearest known group and exit 0.
 */
export const unknownCommand = (args: ReadonlyArray<string>): string | undefined => {
  const walk = walkCommands(args)
  return walk._tag === "Unknown" ? walk.message : undefined
}

type Walk =
  | { readonly _tag: "Unknown"; readonly message: string }
  | {
      readonly _tag: "Known"
      readonly node: CommandNode
      readonly path: ReadonlyArray<string>
      readonly flags: ReadonlyArray<string>
    }

let tree: CommandNode | undefined
const ctlTree = () => {
  tree ??= commandTree(ctl)
  return tree
}

/** Follows the command names on the line as far as the tree goes; flags are collected, `--` ends the walk. */
const walkCommands = (args: ReadonlyArray<string>): Walk => {
  let node = ctlTree()
  const path: Array<string> = []
  const flags: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") break
    if (arg.startsWith("-")) {
      if (path.length === 0 && ROOT_OPTIONS_WITH_VALUE.has(arg)) i++
      flags.push(arg)
      continue
    }
    if (node.children === undefined) break
    const next = node.children.get(arg)
    if (next === undefined)
      return {
        _tag: "Unknown",
        message: `unknown command '${arg}' for '${["ctl", ...path].join(" ")}' (one of: ${[...node.children.keys()].sort().join(", ")})`
      }
    node = next
    path.push(arg)
  }
  return { _tag: "Known", node, path, flags }
}

/** Options the root handles itself (version, completion scripts, the wizard): @effect/cli answers those. */
const ROOT_BUILT_INS = new Set(["--version", "--completions", "--wizard"])

/**
 * The help text when the line names a group (`ctl`, `ctl market`, `ctl market agent --help`): printed from our
 * own tree, without opening anything; undefined when a command or a built-in option should run.
 */
export const groupHelpFor = (args: ReadonlyArray<string>): string | undefined => {
  const walk = walkCommands(args)
  if (walk._tag === "Unknown" || walk.node.children === undefined) return undefined
  if (walk.flags.some((flag) => ROOT_BUILT_INS.has(flag))) return undefined
  const other = walk.flags.filter((flag) => flag !== "--help" && flag !== "-h" && !ROOT_OPTIONS_WITH_VALUE.has(flag))
  if (other.length > 0) return undefined
  return groupHelp(ctlTree(), walk.path, packageVersion())
}

const MainLive = Layer.mergeAll(NodeContext.layer, loggerFromConfig.pipe(Layer.provide(AppConfig.Default)))

/**
 * Commands whose own `--version` option (the seed's spelling: `ctl host release T --binary B --version V`) would
 * otherwise be taken by @effect/cli's built-in `--version`: on their line it is passed on as `--exact-version`.
 */
const OWN_VERSION_OPTION = new Set(["host release", "release submit"])

export const ownVersionOption = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const walk = walkCommands(argv.slice(2))
  if (walk._tag === "Unknown" || !OWN_VERSION_OPTION.has(walk.path.join(" "))) return argv
  const end = argv.indexOf("--")
  return argv.map((arg, i) =>
    i < 2 || (end !== -1 && i > end)
      ? arg
      : arg === "--version"
        ? "--exact-version"
        : arg.startsWith("--version=")
          ? `--exact-version=${arg.slice("--version=".length)}`
          : arg
  )
}

/** Commands whose FILE argument may be `-` (stdout or stdin). */
const STANDARD_STREAM_ARGUMENT = new Set(["db export", "db import"])

/**
 * `ctl db export - --json`: @effect/cli stops looking for options at an argument that starts with `-`, so a bare
 * `-` before them would leave them unknown; on these commands it is moved after the options (their only argument).
 */
export const standardStreamLast = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const walk = walkCommands(argv.slice(2))
  const end = argv.indexOf("--")
  const at = argv.indexOf("-")
  if (walk._tag === "Unknown" || !STANDARD_STREAM_ARGUMENT.has(walk.path.join(" "))) return argv
  if (at < 2 || (end !== -1 && at > end)) return argv
  const rest = argv.filter((_, i) => i !== at)
  return end === -1 ? [...rest, "-"] : [...rest.slice(0, end - 1), "-", ...rest.slice(end - 1)]
}

const ANSI_ESCAPE = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")

/** Colours only for a terminal that wants them (https://no-color.org): help piped to a file is plain text. */
const wantsColour = () =>
  process.stdout.isTTY === true && (process.env.NO_COLOR ?? "") === "" && process.env.TERM !== "dumb"

/**
 * What @effect/cli prints for a command's own `--help`, fixed on the way out: no colour codes unless a terminal
 * wants them, and the usage line names the whole command (`$ ctl lease acquire …`, not `$ acquire …`).
 */
const leafHelpConsole = <A, E, R>(effect: Effect.Effect<A, E, R>, commandPath: ReadonlyArray<string> | undefined) => {
  // Only a command's own help: every other command's output is printed exactly as it is.
  if (commandPath === undefined) return effect
  const colour = wantsColour()
  const leaf = commandPath[commandPath.length - 1]
  const fix = (text: string) => {
    const plain = colour ? text : text.replace(ANSI_ESCAPE, "")
    return leaf === undefined ? plain : plain.replace(`$ ${leaf}`, `$ ctl ${commandPath.join(" ")}`)
  }
  return Effect.flatMap(Effect.console, (console) =>
    Console.withConsole(effect, {
      ...console,
      log: (...args: ReadonlyArray<unknown>) =>
        console.log(...args.map((arg) => (typeof arg === "string" ? fix(arg) : arg)))
    })
  )
}

export const ctlMain = (given: ReadonlyArray<string>) => {
  const argv = standardStreamLast(ownVersionOption(given))
  const unknown = unknownCommand(argv.slice(2))
  if (unknown !== undefined)
    return Console.error(`ctl: ${unknown}`).pipe(Effect.zipRight(Effect.fail(new ExitWith({ code: 2 }))))
  const help = groupHelpFor(argv.slice(2))
  if (help !== undefined) return Console.log(help)
  // `ctl --version` alone: what @effect/cli prints for it, without parsing the line against the whole tree
  // first; the settings are still read (MainLive), so a bad one fails it as it fails every command.
  if (argv.length === 3 && argv[2] === "--version")
    return Effect.zipRight(
      forgetPrintedJson,
      Console.log(HelpDoc.toAnsiText(HelpDoc.p(packageVersion()))).pipe(Effect.provide(MainLive))
    ).pipe(Effect.tapErrorCause((cause) => report(cause, false)))
  const end = argv.indexOf("--")
  const flags = end === -1 ? argv : argv.slice(0, end)
  const asJson = flags.includes("--json")
  // @effect/cli's wizard asks its questions on a terminal; without one it would wait for ever.
  if (flags.includes("--wizard") && process.stdin.isTTY !== true)
    return Console.error("ctl: --wizard needs a terminal (stdin is not one)").pipe(
      Effect.zipRight(Effect.fail(new ExitWith({ code: 2 })))
    )
  const walk = walkCommands(argv.slice(2))
  const leafHelp = (flags.includes("--help") || flags.includes("-h")) && walk._tag === "Known" ? walk.path : undefined
  // Forgotten before the layers are built: a setting refused while building them is this command line's failure.
  return Effect.zipRight(
    forgetPrintedJson,
    leafHelpConsole(runCtl(argv), leafHelp).pipe(Effect.provide(MainLive))
  ).pipe(Effect.tapErrorCause((cause) => report(cause, asJson)))
}
