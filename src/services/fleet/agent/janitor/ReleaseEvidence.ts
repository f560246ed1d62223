import * as path from "node:path"
import { Effect, Option } from "effect"
import type { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { configuredObjectApiClient } from "../../shared/objects/ObjectApiClient.js"
import type { FleetRegistryDocument } from "../../shared/registry/Schema.js"
import type { ReleaseEvidenceSource } from "./ReleaseStore.js"

const unreadableEvidence = (detail: string): ReleaseEvidenceSource => ({
  get: () => Effect.fail({ detail }),
  list: () => Effect.fail({ detail })
})

const remoteEvidence = () =>
  configuredObjectApiClient(["KEEL_JANITOR_GRANT_FILE", "KEEL_GRANT_FILE"]).pipe(
    Effect.map(
      (client): ReleaseEvidenceSource => ({
        get: client.get,
        list: (prefix) => Effect.map(client.list(prefix), (heads) => heads.map((h) => h.key))
      })
    ),
    Effect.catchAll((error) => Effect.succeed(unreadableEvidence(`${error.code}: ${error.detail}`)))
  )

/**
 * What release_store reads: the versions hosts name and the registry declares, and the evidence source — this
 * host's object store, or the control plane's object API (KEEL_CONTROL_PLANE_URL, the grant in
 * KEEL_JANITOR_GRANT_FILE, else KEEL_GRANT_FILE, holding object-read) on a host that reports to one elsewhere.
 */
export const releaseContext = (
  document: FleetRegistryDocument,
  where: {
    readonly controlPlane: Option.Option<string>
    readonly localObjects: Option.Option<ObjectStore["Type"]>
    readonly objectDir: string
  }
) =>
  Effect.gen(function* () {
    const namedByHost = new Set<string>()
    const productOf = new Map<string, string>()
    for (const target of document.targets)
      for (const binary of target.binaries ?? []) {
        productOf.set(binary.name, binary.product)
        if (binary.version !== undefined) namedByHost.add(`${binary.product}/${binary.version}`)
      }
    const declared = new Set<string>()
    for (const [name, version] of Object.entries(document.release_control.versions)) {
      declared.add(`${name}/${version}`)
      const product = productOf.get(name)
      if (product !== undefined) declared.add(`${product}/${version}`)
    }
    const { localObjects } = where
    const evidence: ReleaseEvidenceSource = Option.isSome(where.controlPlane)
      ? yield* remoteEvidence()
      : Option.isSome(localObjects)
        ? {
            get: (key) =>
              Effect.map(
                localObjects.value.get(key),
                Option.map((o) => o.bytes)
              ),
            list: (prefix) => Effect.map(localObjects.value.list(prefix), (heads) => heads.map((h) => h.key))
          }
        : unreadableEvidence("this process has no object store")
    return { namedByHost, declared, evidence, objectDir: path.resolve(where.objectDir) }
  })
