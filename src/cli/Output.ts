import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Data, Duration, Effect, Either, ParseResult, Schema, SchemaAST } from "effect"
import { codeFromTag } from "../contracts/shared/Problem.js"
import { parseDuration } from "../services/platform/DurationSetting.js"

export const json = Options.boolean("json").pipe(Options.withDescription("Print machine-readable JSON on stdout"))

/**
 * A command failed for a reason the user can act on; main prints `detail` and exits 1 (with `--json`, `code` —
 * when the reason has one, e.g. the control plane's — else `COMMAND_FAILED`).
 */
export class CommandFailed extends Data.TaggedError("CommandFailed")<{
  readonly detail: string
  readonly code?: string
}> {}

/** Ends the command with this exact exit code (a remote command's), after its output was shown. */
export class ExitWith extends Data.TaggedError("ExitWith")<{ readonly code: number }> {}

/**
 * A usage mistake the options' own parsing cannot see (a combination of them): one line on stderr, exit 2, as
 * @effect/cli's own usage errors; nothing was done.
 */
export const usageError = (detail: string) =>
  Effect.zipRight(Console.error(`ctl: ${detail}`), Effect.fail(new ExitWith({ code: 2 })))

/**
 * Whether this process already printed a JSON document on stdout: a `--json` command that fails after its answer
 * (a partial result) must not get a second document; one that fails before any gets its `{"error": …}` from main.
 */
let printedJson = false
export const jsonPrinted = () => printedJson
/** A new command line (ctl runs one per process; tests run many in one). */
export const forgetPrintedJson = Effect.sync(() => {
  printedJson = false
})

/** Prints one JSON document on stdout (pretty unless `compact`). */
export const printJson = (value: unknown, options: { readonly compact?: boolean } = {}) =>
  Effect.zipRight(
    Effect.sync(() => {
      printedJson = true
    }),
    Console.log(options.compact === true ? JSON.stringify(value) : JSON.stringify(value, null, 2))
  )

/** Prints `value` as JSON, or its human rendering. */
export const emit = <A>(asJson: boolean, value: A, human: (value: A) => string) =>
  asJson ? printJson(value) : Console.log(human(value))

/** An error's stable code: its own UPPER_SNAKE `code` when it carries one, else its tag in that form. */
export const errorCode = (error: unknown): string => {
  const { _tag, code } = (typeof error === "object" && error !== null ? error : {}) as {
    readonly _tag?: unknown
    readonly code?: unknown
  }
  return typeof code === "string" && code !== "" ? code : codeFromTag(typeof _tag === "string" ? _tag : "Failed")
}

/**
 * Turns a typed error carrying a `detail` into a CommandFailed (and, with --json, a JSON error on stdout
 * whose `code` is the error's stable UPPER_SNAKE code, or its tag in that form: `UnknownTarget` → `UNKNOWN_TARGET`).
 */
export const failWith =
  (asJson: boolean) =>
  <E extends { readonly _tag: string; readonly detail: string; readonly code?: string }>(error: E) =>
    Effect.zipRight(
      asJson ? printJson({ error: { code: errorCode(error), detail: error.detail } }, { compact: true }) : Effect.void,
      Effect.fail(new CommandFailed({ detail: error.detail }))
    )

export const iso = (millis: number) => new Date(millis).toISOString()

/** Left-aligned columns for human output. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}

/** "500ms", "30s", "5m", "2h", "1d" (or Effect's "30 seconds"): the duration syntax of every `ctl` option that takes one. */
export const DurationText = Schema.String.pipe(
  Schema.transformOrFail(Schema.Number, {
    strict: true,
    decode: (text, _, ast) => {
      const duration = parseDuration(text)
      return duration !== undefined
        ? ParseResult.succeed(Duration.toMillis(duration))
        : ParseResult.fail(new ParseResult.Type(ast, text, "expected a duration such as 30s, 5m, 2h (at most 36500d)"))
    },
    encode: (millis) => ParseResult.succeed(`${millis}ms`)
  })
)

/**
 * A `ctl` integer option within bounds: outside them (or past what a double holds exactly) a usage error in one
 * line naming the option and its range, before any database is opened or anything is sent.
 */
export const integerOption = (name: string, min: number, max?: number) =>
  Options.integer(name).pipe(
    Options.mapEffect((n) =>
      Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max)
        ? Effect.succeed(n)
        : Effect.fail(
            ValidationError.invalidValue(
              HelpDoc.p(
                `--${name}: must be an integer ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`}`
              )
            )
          )
    )
  )

/** A `ctl` option taking a duration ("30s", "5m"): a bad one is a usage error in one sentence, not a schema tree. */
export const durationOption = (name: string) =>
  Options.text(name).pipe(
    Options.mapEffect((text) =>
      Either.match(Schema.decodeEither(DurationText)(text), {
        onLeft: () =>
          Effect.fail(
            ValidationError.invalidValue(
              HelpDoc.p(`--${name}: expected a duration such as 30s, 5m, 2h, 1d (at most 36500d)`)
            )
          ),
        onRight: (millis) =>
          millis > 0
            ? Effect.succeed(millis)
            : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: must be longer than 0`)))
      })
    )
  )

/**
 * Decodes a command-line value with a schema; a refusal is a usage error in one line naming the argument and
 * what it must be (its `description` annotation when it has one), never the value or a schema tree.
 */
const decodeOrSay =
  <A>(schema: Schema.Schema<A, string>, name: string) =>
  (text: string): Effect.Effect<A, string> =>
    Either.match(Schema.decodeEither(schema)(text), {
      onLeft: () => {
        const described = SchemaAST.getDescriptionAnnotation(schema.ast)
        return Effect.fail(`${name}: must be ${described._tag === "Some" ? described.value : "a valid value"}`)
      },
      onRight: Effect.succeed
    })

/** For `Args.mapEffect`. */
export const decodeArgument =
  <A>(schema: Schema.Schema<A, string>, name: string) =>
  (text: string) =>
    Effect.mapError(decodeOrSay(schema, name)(text), (message) => HelpDoc.p(message))

/** For `Options.mapEffect`. */
export const decodeOption =
  <A>(schema: Schema.Schema<A, string>, name: string) =>
  (text: string) =>
    Effect.mapError(decodeOrSay(schema, name)(text), (message) => ValidationError.invalidValue(HelpDoc.p(message)))
