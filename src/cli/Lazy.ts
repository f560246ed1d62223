import type { Command } from "@effect/cli"
import { Effect, Layer } from "effect"

/**
 * Start-up is a feature: `ctl --version` and a group's `--help` need only the command tree (each group's options
 * and arguments, `src/cli/<group>.ts`). What a command does, and the services it builds, live in
 * `src/cli/run/<group>.ts` and the layers, loaded with `import()` when the command runs; in the bundle
 * (scripts/bundle-ctl.mjs) each is a chunk of its own.
 */

/** A group's implementation module, imported once, when the first of its commands runs. */
export const lazyRun = <M>(load: () => Promise<M>) => {
  let loaded: Promise<M> | undefined
  const module = Effect.promise(() => {
    loaded ??= load()
    return loaded
  })
  return <A, E, R>(run: (module: M) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.flatMap(module, run)
}

/** A command's layer, its module imported when the command runs (and the layer built then, as before). */
export const lazyLayer = <A, E, R>(load: () => Promise<Layer.Layer<A, E, R>>): Layer.Layer<A, E, R> =>
  Layer.unwrapEffect(Effect.promise(load))

/** What a command's handler receives for its options and arguments (the config given to `Command.make`). */
export type Parsed<Config extends Command.Command.Config> = Command.Command.ParseConfig<Config>
