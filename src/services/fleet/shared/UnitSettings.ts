import * as path from "node:path"
import { Config, Effect, Option } from "effect"
import { hasControlCharacter } from "../../../contracts/shared/Text.js"
import { AppConfig, thisHostName } from "../../platform/AppConfig.js"

/** The account rendered units run as unless told otherwise: a dedicated one. */
export const DEFAULT_UNIT_USER = "keel"

/** What a rendered unit's account and settings must be to render safely. */
export interface UnitSettings {
  readonly user?: string | undefined
  readonly group?: string | undefined
  readonly environmentFile?: string | undefined
  readonly environment?: Readonly<Record<string, string>> | undefined
  /** The `ctl` command the unit runs, word by word (`--ctl`). */
  readonly command?: ReadonlyArray<string> | undefined
}

/** One word of a command a rendered file runs: no line break or control character (it would start another line). */
export const commandWordProblem = (word: string): string | undefined =>
  hasControlCharacter(word)
    ? `the command ${JSON.stringify(word)} must be one line without control characters`
    : undefined

/**
 * Why these unit settings cannot be rendered, or undefined: names are plain account names, every value
 * one line (a newline would inject another setting), paths absolute.
 */
export const unitSettingsProblem = (options: UnitSettings): string | undefined => {
  for (const [key, value] of Object.entries(options.environment ?? {})) {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(key)) return `${key}: not an environment variable name`
    if (/[\n\r\0]/.test(value)) return `${key}: a value must be one line`
  }
  for (const [what, name] of [
    ["user", options.user],
    ["group", options.group]
  ] as const)
    if (name !== undefined && !/^[a-z_][a-z0-9_-]*\$?$/i.test(name))
      return `${what} ${JSON.stringify(name)}: not an account name`
  if (options.command !== undefined) {
    if (options.command.length === 0) return "the command must not be empty"
    for (const word of options.command) {
      const problem = commandWordProblem(word)
      if (problem !== undefined) return problem
    }
  }
  if (options.environmentFile !== undefined && !options.environmentFile.startsWith("/"))
    return "the environment file must be an absolute path"
  return undefined
}

/** An environment file's text: KEY="value" lines, as systemd's EnvironmentFile= reads them. */
export const renderUnitEnvironment = (environment: Readonly<Record<string, string>>, header?: string) =>
  [
    ...(header === undefined ? [] : [`# ${header}`]),
    ...Object.entries(environment).map(([key, value]) => `${key}="${value.replace(/(["\\$`])/g, "\\$1")}"`)
  ]
    .join("\n")
    .concat("\n")

/**
 * What a unit running `ctl` on its own needs (under systemd the working directory is `/`): the registry,
 * the data dir (absolute), the host, as this process resolved them. Never a secret.
 */
export const unitEnvironment = Effect.gen(function* () {
  const app = yield* AppConfig
  const optional = (name: string) => Config.option(Config.string(name)).pipe(Effect.map(Option.getOrUndefined))
  const entries: Array<[string, string | undefined]> = [
    ["KEEL_REGISTRY", yield* optional("KEEL_REGISTRY")],
    ["KEEL_REGISTRY_REF", yield* optional("KEEL_REGISTRY_REF")],
    ["KEEL_REGISTRY_PATH", yield* optional("KEEL_REGISTRY_PATH")],
    ["KEEL_DATA_DIR", path.resolve(app.dataDir)],
    ["KEEL_HOST", yield* thisHostName]
  ]
  return Object.fromEntries(entries.filter((e): e is [string, string] => e[1] !== undefined))
}).pipe(Effect.orDie)
