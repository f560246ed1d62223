import { Effect } from "effect"
import { effectiveSettings } from "../../services/platform/EffectiveSettings.js"
import { emit, table } from "../Output.js"

export const show = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const settings = yield* effectiveSettings
    yield* emit(json, settings, (s) =>
      table(
        ["SETTING", "VALUE"],
        Object.entries(s).map(([k, v]) => [k, v === null ? "-" : String(v)])
      )
    )
  })
