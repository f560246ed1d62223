import { Config, Effect, Option } from "effect"
import type { ProviderAdapter } from "../../shared/providers/ProviderAdapter.js"
import { adaptersNamed } from "../../shared/providers/Providers.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"

/** The selected profile and the provider adapters it enables, or why none could be selected. */
export interface SelectedProfile {
  /** KEEL_PROFILE, else the registry's `settings.profile`; null when neither names one. */
  readonly name: string | null
  readonly providers: ReadonlyArray<string>
  /** Why no provider is enabled although a profile was asked for (an unknown name, an unreadable registry). */
  readonly error: string | null
}

/**
 * The selected profile (seed 002: provider-specific diagnostics are available only when that provider is enabled in
 * the selected profile): KEEL_PROFILE, else the registry's `settings.profile`, looked up in its `profiles`. Nothing
 * selected, or a selection that cannot be resolved, enables no provider: never a guess.
 */
export class ProviderProfile extends Effect.Service<ProviderProfile>()("fleet/ProviderProfile", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const fromEnvironment = yield* Config.option(Config.string("KEEL_PROFILE"))

    const selected: Effect.Effect<SelectedProfile & { readonly adapters: ReadonlyArray<ProviderAdapter> }> = Effect.gen(
      function* () {
        const read = yield* registry.read({ allowCached: true, record: false }).pipe(Effect.either)
        const asked = Option.getOrUndefined(fromEnvironment)
        if (read._tag === "Left")
          return {
            name: asked ?? null,
            providers: [],
            adapters: [],
            error: `the registry cannot be read to select a profile: ${read.left.detail}`
          }
        const document = read.right.registry
        const name = asked ?? document.settings.profile
        if (name === undefined) return { name: null, providers: [], adapters: [], error: null }
        const profile = Object.hasOwn(document.profiles, name) ? document.profiles[name] : undefined
        if (profile === undefined)
          return {
            name,
            providers: [],
            adapters: [],
            error: `no profile named ${name} in the registry (profiles: ${Object.keys(document.profiles).join(", ") || "none"})`
          }
        return { name, providers: [...profile.providers], adapters: adaptersNamed(profile.providers), error: null }
      }
    )

    return { selected } as const
  })
}) {}
