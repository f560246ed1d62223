import * as fs from "node:fs/promises"
import { Clock, Data, Effect, Either, Ref, Schedule, Schema } from "effect"
import * as YAML from "yaml"
import { sha256Hex } from "../platform/Digest.js"
import { formatIssues } from "../platform/Validation.js"
import { ProductConfig } from "./ProductConfig.js"

const Id = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/))

/**
 * Each value met again, as an issue at the path of that use naming the first (`label`: how its place is named
 * where the issue is reported).
 */
const repeatedValues = (
  entries: ReadonlyArray<{
    readonly value: string
    readonly path: ReadonlyArray<string | number>
    readonly label: string
  }>,
  what: (value: string) => string
): Array<Schema.FilterIssue> => {
  const first = new Map<string, string>()
  const issues: Array<Schema.FilterIssue> = []
  for (const { label, path, value } of entries) {
    const seen = first.get(value)
    if (seen === undefined) first.set(value, label)
    else issues.push({ path, message: `${what(value)} (also ${seen})` })
  }
  return issues
}

const orIssues = (issues: ReadonlyArray<Schema.FilterIssue>) => (issues.length === 0 ? true : issues)

export const Variant = Schema.Struct({
  name: Id,
  weight: Schema.Number.pipe(Schema.nonNegative()),
  config: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), {
    default: () => ({})
  })
})
export type Variant = typeof Variant.Type

export const Experiment = Schema.Struct({
  id: Id,
  status: Schema.Literal("running", "paused", "stopped"),
  kill_switch: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  traffic: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => 1 }),
  variants: Schema.NonEmptyArray(Variant)
}).pipe(
  Schema.filter((e) => {
    const sum = e.variants.reduce((total, v) => total + v.weight, 0)
    if (sum < 0.99 || sum > 1.01)
      return { path: ["variants"], message: `variant weights must sum to 1 (they sum to ${sum})` }
    return orIssues(
      repeatedValues(
        e.variants.map((v, i) => ({ value: v.name, path: ["variants", i, "name"], label: `variants.${i}` })),
        (name) => `variant ${name} is listed twice`
      )
    )
  })
)
export type Experiment = typeof Experiment.Type

export const Journey = Schema.Struct({
  platform: Id,
  surface: Id,
  experiment: Schema.optional(Experiment)
})
export type Journey = typeof Journey.Type

export const App = Schema.Struct({
  app_id: Id,
  client_keys: Schema.NonEmptyArray(Schema.String.pipe(Schema.minLength(8))),
  journeys: Schema.optionalWith(Schema.Array(Journey), { default: () => [] })
}).pipe(
  Schema.filter((app) => {
    return orIssues(
      repeatedValues(
        app.journeys.map((j, i) => ({
          value: `${j.platform}/${j.surface}`,
          path: ["journeys", i],
          label: `journeys.${i}`
        })),
        (key) => `journey ${key} is listed twice`
      )
    )
  })
)
export type App = typeof App.Type

export const RegistryDocument = Schema.Struct({
  apps: Schema.optionalWith(Schema.Array(App), { default: () => [] })
}).pipe(
  Schema.filter((doc) =>
    orIssues([
      ...repeatedValues(
        doc.apps.map((a, i) => ({ value: a.app_id, path: ["apps", i, "app_id"], label: `apps.${i}.app_id` })),
        (id) => `app ${id} is listed twice`
      ),
      ...repeatedValues(
        doc.apps.flatMap((a, i) =>
          a.journeys.flatMap((j, k) =>
            j.experiment
              ? [
                  {
                    value: j.experiment.id,
                    path: ["apps", i, "journeys", k, "experiment", "id"],
                    label: `apps.${i}.journeys.${k}.experiment.id`
                  }
                ]
              : []
          )
        ),
        (id) => `experiment ${id} is used by two journeys`
      )
    ])
  )
)
export type RegistryDocument = typeof RegistryDocument.Type

export class RegistryInvalid extends Data.TaggedError("RegistryInvalid")<{
  readonly file: string
  readonly detail: string
}> {}

/** One accepted version of the registry. */
export interface LoadedRegistry {
  readonly file: string
  readonly digest: string
  readonly loadedAt: number
  readonly apps: ReadonlyMap<string, App>
}

export type ReloadOutcome =
  | { readonly _tag: "Loaded"; readonly digest: string }
  | { readonly _tag: "Unchanged"; readonly digest: string }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Refused"; readonly detail: string; readonly kept: string }

const decode = Schema.decodeUnknownEither(RegistryDocument, { errors: "all", onExcessProperty: "error" })

/** Parses and validates registry text; the error names each offending path. Pure, for tests and `ctl`. */
export const parseRegistry = (file: string, text: string): Either.Either<RegistryDocument, RegistryInvalid> => {
  let raw: unknown
  try {
    raw = YAML.parse(text)
  } catch (error) {
    return Either.left(
      new RegistryInvalid({ file, detail: `not valid YAML: ${(error as Error).message.split("\n")[0]}` })
    )
  }
  // Empty, or comments only: a truncated write more often than a wish for no apps, which says `apps: []`.
  if (raw === null || raw === undefined)
    return Either.left(
      new RegistryInvalid({ file, detail: "the file is empty (a registry with no apps is `apps: []`)" })
    )
  return Either.mapLeft(
    decode(raw),
    (error) => new RegistryInvalid({ file, detail: formatIssues(error, { limit: 10 }) })
  )
}

const emptyRegistry = (file: string): LoadedRegistry => ({ file, digest: "", loadedAt: 0, apps: new Map() })

/**
 * The journey contracts of every app, read from a YAML file and re-read when it changes (polled,
 * which works across editors that replace files and across network filesystems). A broken edit is
 * refused with its reasons logged, and the last valid version keeps serving.
 */
export class JourneyRegistry extends Effect.Service<JourneyRegistry>()("product/JourneyRegistry", {
  scoped: Effect.gen(function* () {
    const config = yield* ProductConfig
    const file = config.registryFile
    const state = yield* Ref.make(emptyRegistry(file))
    // What was last refused (the file's digest, or "unreadable"): a refusal is logged once per edit, not per poll.
    const refused = yield* Ref.make<string | undefined>(undefined)
    const firstRefusal = (what: string) => Ref.modify(refused, (last) => [last !== what, what] as const)

    const reload: Effect.Effect<ReloadOutcome> = Effect.gen(function* () {
      const text = yield* Effect.tryPromise(() => fs.readFile(file, "utf8")).pipe(Effect.option)
      if (text._tag === "None") {
        const current = yield* Ref.get(state)
        if (current.digest === "") return { _tag: "Missing" } as const
        if (yield* firstRefusal("unreadable"))
          yield* Effect.logWarning("product registry unreadable; keeping the last valid version").pipe(
            Effect.annotateLogs({ file, kept: current.digest })
          )
        return { _tag: "Refused", detail: `cannot read ${file}`, kept: current.digest } as const
      }
      const digest = sha256Hex(text.value).slice(0, 16)
      const current = yield* Ref.get(state)
      if (digest === current.digest) {
        yield* Ref.set(refused, undefined)
        return { _tag: "Unchanged", digest } as const
      }
      const parsed = parseRegistry(file, text.value)
      if (Either.isLeft(parsed)) {
        if (yield* firstRefusal(digest))
          yield* Effect.logError("product registry refused; keeping the last valid version").pipe(
            Effect.annotateLogs({ file, detail: parsed.left.detail, kept: current.digest || "(none)" })
          )
        return { _tag: "Refused", detail: parsed.left.detail, kept: current.digest } as const
      }
      yield* Ref.set(refused, undefined)
      const loadedAt = yield* Clock.currentTimeMillis
      yield* Ref.set(state, {
        file,
        digest,
        loadedAt,
        apps: new Map(parsed.right.apps.map((app) => [app.app_id, app]))
      })
      yield* Effect.logInfo("product registry loaded").pipe(
        Effect.annotateLogs({ file, digest, apps: parsed.right.apps.length })
      )
      return { _tag: "Loaded", digest } as const
    })

    yield* reload
    yield* Effect.forkScoped(
      Effect.repeat(reload, Schedule.spaced(config.registryPoll)).pipe(Effect.delay(config.registryPoll))
    )

    return {
      current: Ref.get(state),
      reload,
      app: (appId: string) => Effect.map(Ref.get(state), (registry) => registry.apps.get(appId))
    } as const
  })
}) {}
