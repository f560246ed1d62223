import { Effect, Layer, Logger, LogLevel } from "effect"
import { AppConfig, type LogFormat, type LogLevelName } from "./AppConfig.js"

const levels: Record<LogLevelName, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

/** "auto" means pretty for a person at a terminal and JSON lines for everything else (files, journald, CI). */
export const resolveLogFormat = (format: LogFormat, isTTY: boolean): Exclude<LogFormat, "auto"> =>
  format === "auto" ? (isTTY ? "pretty" : "json") : format

/**
 * Replaces the default logger. Logs go to stderr so that `--json` output on stdout stays machine-readable.
 */
export const loggerLayer = (format: LogFormat, level: LogLevelName, isTTY = process.stderr.isTTY === true) => {
  const resolved = resolveLogFormat(format, isTTY)
  const base =
    resolved === "pretty"
      ? Logger.prettyLogger({ stderr: true, colors: isTTY })
      : (resolved === "json" ? Logger.jsonLogger : Logger.logfmtLogger).pipe(Logger.withConsoleError)
  return Layer.merge(Logger.replace(Logger.defaultLogger, base), Logger.minimumLogLevel(levels[level]))
}

export const loggerFromConfig = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => loggerLayer(config.logFormat, config.logLevel))
)
