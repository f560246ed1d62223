import { ConfigProvider, Console, Effect, type Exit } from "effect"
import { ctlMain, exitCodeOf } from "./keel.js"
import { onTestDatabase } from "./pg-datadir.js"

export interface CliRun {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

const capture = () => {
  const out: Array<string> = []
  const err: Array<string> = []
  const line = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a : String(a))).join(" ")
  const unsafe = {
    ...globalThis.console,
    log: (...args: ReadonlyArray<unknown>) => void out.push(line(args)),
    info: (...args: ReadonlyArray<unknown>) => void out.push(line(args)),
    error: (...args: ReadonlyArray<unknown>) => void err.push(line(args)),
    warn: (...args: ReadonlyArray<unknown>) => void err.push(line(args))
  } as Console.UnsafeConsole
  const console: Console.Console = {
    [Console.TypeId]: Console.TypeId,
    assert: () => Effect.void,
    clear: Effect.void,
    count: () => Effect.void,
    countReset: () => Effect.void,
    debug: () => Effect.void,
    dir: () => Effect.void,
    dirxml: () => Effect.void,
    error: (...args) => Effect.sync(() => unsafe.error(...args)),
    group: () => Effect.void,
    groupEnd: Effect.void,
    info: (...args) => Effect.sync(() => unsafe.info(...args)),
    log: (...args) => Effect.sync(() => unsafe.log(...args)),
    table: () => Effect.void,
    time: () => Effect.void,
    timeEnd: () => Effect.void,
    timeLog: () => Effect.void,
    trace: () => Effect.void,
    warn: (...args) => Effect.sync(() => unsafe.warn(...args)),
    unsafe
  }
  return { console, out, err }
}

/**
 * Runs `ctl <args>` in this process with a captured console and the given environment (instead of
 * process.env), and reports what a shell would see: the exit code, stdout and stderr.
 */
export const runCli = (args: ReadonlyArray<string>, given: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const { console, err, out } = capture()
    // Under npm run test:pg the data dir's database is a PostgreSQL schema of its own (pg-datadir.ts).
    const env = yield* Effect.promise(() => onTestDatabase(given))
    const exit = yield* ctlMain(["node", "ctl", ...args]).pipe(
      Effect.withConsole(console),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ KEEL_LOG_LEVEL: "warning", ...env })))),
      Effect.exit
    )
    return {
      exitCode: exitCodeOf(exit as Exit.Exit<unknown, unknown>),
      stdout: out.join("\n"),
      stderr: err.join("\n")
    } satisfies CliRun
  })
