import { Effect, Schema } from "effect"
import * as Yaml from "yaml"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { RegistryWriter } from "../registry/RegistryWriter.js"

/** The target or its binary is not declared, or the version is not a version: the registry was not written. */
export class DeclareRefused extends Schema.TaggedError<DeclareRefused>()("DeclareRefused", {
  code: Schema.Literal("DECLARE_REFUSED"),
  detail: Schema.String
}) {}

const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/

/** How many times a declaration re-reads and retries when another writer changed the registry meanwhile. */
const ATTEMPTS = 3

/**
 * `ctl host declare-version <target> <binary> <version>` (docs/releases.md): sets `targets[<target>].binaries[<binary>]
 * .version` through the registry's compare-and-set update — the rest of the document, its comments included, kept
 * as it is; audited like every registry write. A concurrent write makes it re-read and try again (it is idempotent).
 */
export class VersionDeclaration extends Effect.Service<VersionDeclaration>()("fleet/VersionDeclaration", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const writer = yield* RegistryWriter
    const refused = (detail: string) => new DeclareRefused({ code: "DECLARE_REFUSED", detail })

    const declare = (target: string, binary: string, version: string) =>
      Effect.gen(function* () {
        if (!VERSION.test(version)) return yield* refused(`${version} is not a version (letters, digits, . + _ -)`)
        for (let attempt = 1; ; attempt++) {
          const snapshot = yield* registry.read().pipe(Effect.mapError((e) => refused(`the registry: ${e.detail}`)))
          const targetIndex = snapshot.registry.targets.findIndex((t) => t.name === target)
          if (targetIndex === -1) return yield* refused(`${target} is not a target of the registry`)
          const binaryIndex = snapshot.registry.targets[targetIndex]!.binaries.findIndex((b) => b.name === binary)
          if (binaryIndex === -1) return yield* refused(`${target} declares no binary ${binary} (targets[].binaries)`)
          const previous = snapshot.registry.targets[targetIndex]!.binaries[binaryIndex]!.version ?? null
          const change = (text: string) => {
            const document = Yaml.parseDocument(text)
            document.setIn(["targets", targetIndex, "binaries", binaryIndex, "version"], version)
            return document.toString()
          }
          const written = yield* writer
            .update(snapshot.digest, change, `declare ${target} ${binary} ${version}`)
            .pipe(Effect.either)
          if (written._tag === "Right") return { target, binary, version, previous, ...written.right }
          if (written.left._tag !== "RegistryConflict" || attempt >= ATTEMPTS)
            return yield* refused(`the registry was not written: ${written.left.detail}`)
        }
      })

    return { declare } as const
  })
}) {}
