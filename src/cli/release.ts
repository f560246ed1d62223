import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { ServicesLive } from "../layers/Live.js"
import { CatalogMaintenance, type SyncedRelease } from "../services/fleet/releases/CatalogMaintenance.js"
import { SIGNING_KEY_FIELD } from "../services/fleet/releases/ReleaseAuthority.js"
import { generateKeyPair } from "../services/platform/vault/Ed25519.js"
import { Vault } from "../services/platform/vault/Vault.js"
import { CommandFailed, ExitWith, emit, failWith, json } from "./Output.js"

const line = (release: SyncedRelease) =>
  `${release.outcome.padEnd(8)} ${release.product} ${release.version}${release.problems.map((p) => `\n         ${p.code}: ${p.detail}`).join("")}`

const sync = Command.make(
  "sync",
  {
    root: Options.directory("root", { exists: "yes" }).pipe(
      Options.withDescription("A release tree: <product>/<version>/ directories (or a releases/ directory of them)")
    ),
    json
  },
  ({ json, root }) =>
    Effect.gen(function* () {
      const report = yield* (yield* CatalogMaintenance)
        .sync(root, (release) => (json ? Effect.void : Console.log(line(release))))
        .pipe(Effect.catchTag("ReleaseAuthorityUnavailable", failWith(json)))
      if (json) yield* Console.log(JSON.stringify(report, null, 2))
      else
        yield* Console.log(
          `${report.releases.length} release(s): ${report.releases.filter((r) => r.outcome === "imported").length} imported, ${report.releases.filter((r) => r.outcome === "present").length} present, ${report.releases.filter((r) => r.outcome === "refused").length} refused`
        )
      if (!report.ok) return yield* new ExitWith({ code: 1 })
    })
).pipe(
  Command.withDescription(
    "Import existing release trees into the catalog: each verified (signature, manifest, digests) before it is published"
  )
)

const audit = Command.make("audit", { json }, ({ json }) =>
  Effect.gen(function* () {
    const report = yield* (yield* CatalogMaintenance).audit.pipe(
      Effect.catchTag("ReleaseAuthorityUnavailable", failWith(json))
    )
    yield* emit(json, report, (r) =>
      [
        `trusted key ${r.trusted_key_id}`,
        ...r.releases.map(
          (release) =>
            `${release.ok ? "ok      " : "FAILED  "} ${release.product} ${release.version}${release.problems.map((p) => `\n         ${p.code}: ${p.detail}`).join("")}`
        ),
        r.ok ? `${r.releases.length} release(s) verified` : "the catalog does not verify"
      ].join("\n")
    )
    if (!report.ok) return yield* new ExitWith({ code: 1 })
  })
).pipe(
  Command.withDescription(
    "Re-verify every catalog entry in the object store: objects, digests, signatures, reservations"
  )
)

const keyCreate = Command.make(
  "create",
  {
    item: Options.text("item").pipe(
      Options.withDescription("The vault item to create (settings.release.signing_key_item)")
    ),
    json
  },
  ({ item, json }) =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const existing = yield* vault.listItems
      if (existing.some((i) => i.name === item))
        return yield* new CommandFailed({
          detail: `the vault already holds ${item}: a signing key is never replaced here`
        })
      const pair = generateKeyPair()
      yield* vault
        .putItem(item, { [SIGNING_KEY_FIELD]: pair.private_key })
        .pipe(Effect.catchTag("VaultInvalid", failWith(json)))
      yield* emit(json, { item, key_id: pair.key_id, public_key: pair.public_key }, (k) =>
        [
          `created ${k.item} (field ${SIGNING_KEY_FIELD}; the private key stays in the vault)`,
          `key id      ${k.key_id}`,
          `public key  ${k.public_key}`,
          "set settings.release.signing_key_item and settings.release.signing_key_id in the registry to use it"
        ].join("\n")
      )
    })
).pipe(Command.withDescription("Create an Ed25519 release signing key in the vault; prints its key id and public key"))

const keyShow = Command.make(
  "show",
  { item: Options.text("item").pipe(Options.withDescription("The vault item holding the key")), json },
  ({ item, json }) =>
    Effect.gen(function* () {
      const key = yield* (yield* Vault).publicKey(item, SIGNING_KEY_FIELD).pipe(
        Effect.catchTags({
          VaultItemNotFound: failWith(json),
          VaultCorrupt: failWith(json),
          VaultKeyRefused: failWith(json)
        })
      )
      yield* emit(json, { item, ...key }, (k) => `key id      ${k.key_id}\npublic key  ${k.public_key}`)
    })
).pipe(Command.withDescription("The key id and public key of a release signing key in the vault"))

export const release = Command.make("release").pipe(
  Command.withDescription("Releases: the signing key and the catalog (docs/releases.md)"),
  Command.withSubcommands([
    Command.make("catalog").pipe(
      Command.withDescription("The release catalog"),
      Command.withSubcommands([sync, audit])
    ),
    Command.make("key").pipe(
      Command.withDescription("The release signing key, held in the vault"),
      Command.withSubcommands([keyCreate, keyShow])
    )
  ]),
  Command.provide(ServicesLive)
)
