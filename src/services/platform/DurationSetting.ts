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
  // Effect's forms, never negative; "Infinity" is not a setting anyone means.
  const parsed =
    compact !== null
      ? COMPACT_UNITS[compact[2] ?? "s"]?.(Number(compact[1]))
      : /^\d+(?:\.\d+)?\s+[a-z]+$/.test(text.trim())
        ? Option.getOrUndefined(Duration.decodeUnknown(text.trim()))
        : undefined
  // Longer is no duration anyone means, and past it "now + ttl" is no longer a date (99999999d broke every read).
  return parsed !== undefined && Duration.lessThanOrEqualTo(parsed, LONGEST_DURATION) ? parsed : undefined
}

/** The longest duration a setting or an option takes: 100 years (36500d). */
export const LONGEST_DURATION = Duration.days(36_500)

/** A duration setting read from `name`, in either form (docs/configuration.md "Durations"). */
export const durationSetting = (name: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((text) => {
      const duration = parseDuration(text)
      return duration === undefined
        ? Either.left(
            ConfigError.InvalidData(
              [],
              `expected a duration such as 30s, 5m, 2h or "30 seconds", at most 36500d (got ${JSON.stringify(text.slice(0, 40))})`
            )
          )
        : Either.right(duration)
    })
  )
