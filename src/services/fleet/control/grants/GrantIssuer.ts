import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect } from "effect"
import { Vault } from "../../../platform/vault/Vault.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { FleetActions } from "../../shared/registry/Schema.js"
import { GrantRefused } from "./Errors.js"

export interface GrantRequest {
  readonly consumer: string
  readonly actions: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
  readonly items: ReadonlyArray<string>
  readonly ttlMillis: number
  /** Where the credential is written, owner-only (0600). */
  readonly out: string
  /** Replace a file already at `out`; without it, an existing file is refused. */
  readonly force: boolean
}

const refused = (code: GrantRefused["code"], detail: string) => new GrantRefused({ code, detail })

const unknownOf = (asked: ReadonlyArray<string>, known: ReadonlySet<string>) => [
  ...new Set(asked.filter((name) => !known.has(name)))
]

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

const exists = (file: string) =>
  Effect.promise(() =>
    fs.lstat(file).then(
      () => true,
      () => false
    )
  )

/** `text` at `file`, mode 0600: created exclusively, or (force) through a temporary file renamed over it. */
const writeOwnerOnly = (file: string, text: string, force: boolean) =>
  Effect.tryPromise({
    try: async () => {
      const target = force ? `${file}.${randomBytes(6).toString("hex")}.tmp` : file
      const handle = await fs.open(target, "wx", 0o600)
      try {
        try {
          await handle.writeFile(text)
          await handle.sync()
        } finally {
          await handle.close()
        }
        if (force) await fs.rename(target, file)
      } catch (error) {
        // Never leave a partial credential behind (neither the file nor the temporary one).
        await fs.rm(target, { force: true })
        throw error
      }
    },
    catch: (error) =>
      // EEXIST of the file itself only (a parent that is a file makes mkdir say EEXIST too: that is no credential).
      (error as NodeJS.ErrnoException).code === "EEXIST" && (error as NodeJS.ErrnoException).path === file
        ? refused("CREDENTIAL_FILE_EXISTS", `${file} already exists; pass --force to replace it`)
        : refused("CREDENTIAL_WRITE_FAILED", `could not write ${file}: ${errorText(error)}`)
  })

/**
 * Issues vault grants for the fleet: every action must be a registry action, every host a target of the
 * registry (the current one, or its last valid snapshot; none readable is a refusal), every item one the
 * vault holds. The credential is written owner-only and never over an existing file unless forced. All
 * checks run before anything is granted; a credential that cannot be written revokes its grant.
 */
export class GrantIssuer extends Effect.Service<GrantIssuer>()("fleet/GrantIssuer", {
  effect: Effect.gen(function* () {
    const vault = yield* Vault
    const registry = yield* FleetRegistry

    const check = Effect.fn("GrantIssuer.check")(function* (request: Omit<GrantRequest, "ttlMillis">) {
      const out = path.resolve(request.out)
      if (!request.force && (yield* exists(out)))
        return yield* refused("CREDENTIAL_FILE_EXISTS", `${out} already exists; pass --force to replace it`)
      // The directory must exist already: a credential is never where nobody chose to put one (and a recursive
      // mkdir under /proc never returns), and a grant is only created once its file can be written.
      const parent = path.dirname(out)
      const parentIsDirectory = yield* Effect.promise(() =>
        fs.stat(parent).then(
          (stat) => stat.isDirectory(),
          () => false
        )
      )
      if (!parentIsDirectory)
        return yield* refused(
          "CREDENTIAL_WRITE_FAILED",
          `could not write ${out}: ${parent} is not an existing directory`
        )
      const actions = unknownOf(request.actions, new Set(FleetActions))
      if (actions.length > 0)
        return yield* refused(
          "UNKNOWN_ACTION",
          `unknown action ${actions.join(", ")}; the registry's actions are ${FleetActions.join(", ")}`
        )
      if (request.items.length > 0) {
        const listed = yield* vault.listItems
        const held = new Set(listed.flatMap((item) => [item.name, ...item.fields.map((f) => `${item.name}#${f}`)]))
        const items = unknownOf(request.items, held)
        if (items.length > 0) {
          const whole = items.filter((item) => !item.includes("#"))
          const fields = items.filter((item) => item.includes("#"))
          const missing = [
            ...(whole.length > 0 ? [`the vault holds no item ${whole.join(", ")}`] : []),
            ...(fields.length > 0 ? [`the vault holds no field ${fields.join(", ")}`] : [])
          ].join("; ")
          return yield* refused("UNKNOWN_ITEM", `${missing} (see ctl vault item list)`)
        }
        // A field-scoped grant (item#field) is a build or delivery secret: the registry must permit it.
        const fields = request.items.filter((item) => item.includes("#"))
        if (fields.length > 0) {
          const snapshot = yield* registry
            .read({ allowCached: true, record: false })
            .pipe(
              Effect.mapError((error) =>
                refused(
                  "REGISTRY_UNAVAILABLE",
                  `cannot check ${fields.join(", ")} without a readable registry: ${error.detail}`
                )
              )
            )
          const allowed = new Set(snapshot.registry.settings.agent.skarbiec.secret_fields)
          const denied = fields.filter((field) => !allowed.has(field))
          if (denied.length > 0)
            return yield* refused(
              "SECRET_FIELD_NOT_ALLOWED",
              `${denied.join(", ")} ${denied.length === 1 ? "is" : "are"} not in settings.agent.skarbiec.secret_fields`
            )
        }
      }
      if (request.hosts.length > 0) {
        const snapshot = yield* registry
          .read({ allowCached: true, record: false })
          .pipe(
            Effect.mapError((error) =>
              refused(
                "REGISTRY_UNAVAILABLE",
                `cannot check --host without a readable registry: ${error.source}: ${error.detail}`
              )
            )
          )
        const hosts = unknownOf(request.hosts, new Set(snapshot.registry.targets.map((target) => target.name)))
        if (hosts.length > 0)
          return yield* refused(
            "UNKNOWN_HOST",
            `${hosts.join(", ")} ${hosts.length === 1 ? "is not a target" : "are not targets"} of the registry (${snapshot.source.location})`
          )
      }
      return out
    })

    /** Checks the request, creates the grant and writes its credential to `out` (mode 0600). */
    const issue = Effect.fn("GrantIssuer.issue")(function* (request: GrantRequest) {
      const out = yield* check(request)
      const { credential, grant } = yield* vault.createGrant(request)
      yield* writeOwnerOnly(out, `${JSON.stringify(credential, null, 2)}\n`, request.force).pipe(
        // A grant whose secret was never written is of no use to anyone: it does not outlive the failure.
        Effect.tapError(() => vault.revokeGrant(grant.id))
      )
      return { grant, credentialFile: out }
    })

    return { check, issue } as const
  })
}) {}
