import { Config, Duration } from "effect"
import { durationSetting } from "./DurationSetting.js"

/** The Redis every process shares counters through (docs/marketplace.md, "Rate limits"); absent, none is used. */
export const redisSettings = Config.all({
  /** A secret (its password): shown by `ctl config show` without it, never logged. */
  url: Config.option(Config.redacted("KEEL_REDIS_URL")),
  /** Prepended to every key: several Keels may share one Redis. */
  prefix: Config.string("KEEL_REDIS_PREFIX").pipe(Config.withDefault("keel:rate:")),
  /** The longest one command may take before Redis counts as failing. */
  timeout: durationSetting("KEEL_REDIS_TIMEOUT").pipe(Config.withDefault(Duration.millis(250)))
})
