import { Config, ConfigError, Duration, Either, Option } from "effect"

const COMPACT_UNITS: Record<string, (n: number) => Duration.Duration> = {
  ms: Duration.millis,
  s: Duration.seconds,
  m: Duration.minutes,
  h: Duration.hours,
  d: Duration.days
}

/**
 * A duration as settings write it: the compact forms every `ctl` option takes (`500ms`, `30s`, `5m`, `2h`, `1d`)
 * or Effect's (`30 seconds`, `500 millis`, `5 minutes`); undefined for anything else.
 */
export const parseDuration = (text: string): Duration.Duration | undefined => {
  const compact = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim())
  if (compact !== null) return COMPACT_UNITS[compact[2] ?? "s"]?.(Number(compact[1]))
  // Effect's forms, never negative; "Infinity" is not a setting anyone means.
  if (!/^\d+(?:\.\d+)?\s+[a-z]+$/.test(text.trim())) return undefined
  return Option.getOrUndefined(Duration.decodeUnknown(text.trim()))
}

/** A duration setting read from `name`, in either form (docs/configuration.md "Durations"). */
export const durationSetting = (name: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((text) => {
      const duration = parseDuration(text)
      return duration === undefined
        ? Either.left(
            ConfigError.InvalidData(
              [name],
              `expected a duration such as 30s, 5m, 2h or "30 seconds" (got ${JSON.stringify(text)})`
            )
          )
        : Either.right(duration)
    })
  )
