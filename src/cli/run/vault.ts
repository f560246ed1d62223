import { Effect, Option } from "effect"
import type { Grant } from "../../contracts/vault/Schemas.js"
import { GrantIssuer } from "../../services/fleet/control/grants/GrantIssuer.js"
import { parseItemInput } from "../../services/platform/vault/ItemInput.js"
import { Vault } from "../../services/platform/vault/Vault.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, emit, failWith, iso, table } from "../Output.js"
import type { createConfig, getConfig, putConfig, revokeConfig, rmConfig } from "../vault.js"

/** Secret values come on stdin, never in argv. */
const readStdin = Effect.tryPromise({
  try: async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString("utf8")
  },
  catch: (error) => new CommandFailed({ detail: `could not read stdin: ${(error as Error).message}` })
})

const grantJson = (grant: Grant) => ({
  ...grant,
  created_at: iso(grant.created_at),
  expires_at: iso(grant.expires_at),
  revoked_at: grant.revoked_at === null ? null : iso(grant.revoked_at)
})

export const put = ({ field, item, json, merge }: Parsed<typeof putConfig>) =>
  Effect.gen(function* () {
    const vault = yield* Vault
    const given = yield* parseItemInput(yield* readStdin, Option.getOrUndefined(field)).pipe(
      Effect.catchAll(failWith(json))
    )
    const existing = merge ? yield* vault.getItem(item).pipe(Effect.orElseSucceed(() => ({}))) : {}
    const fields = { ...existing, ...given }
    yield* vault.putItem(item, fields).pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, { item, fields: Object.keys(fields).sort() }, (r) => `stored ${r.item} (${r.fields.join(", ")})`)
  })

export const get = ({ field, item, json }: Parsed<typeof getConfig>) =>
  Effect.gen(function* () {
    const fields = yield* (yield* Vault).getItem(item).pipe(Effect.catchAll(failWith(json)))
    if (Option.isSome(field)) {
      const value = fields[field.value]
      if (value === undefined)
        return yield* new CommandFailed({
          code: "VAULT_FIELD_NOT_FOUND",
          detail: `item ${item} has no field ${field.value}`
        })
      // The value's bytes exactly, no newline added: `get --field` pipes a key into a file unchanged.
      if (!json) return yield* Effect.sync(() => process.stdout.write(value))
      return yield* emit(json, { value }, (r) => r.value)
    }
    yield* emit(json, fields, (f) =>
      Object.entries(f)
        .map(([k, v]) => `${k}=${v}`)
        .join("\n")
    )
  })

export const list = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const items = yield* (yield* Vault).listItems
    yield* emit(json, items, (rows) =>
      table(
        ["ITEM", "FIELDS"],
        rows.map((r) => [r.name, r.fields.join(", ")])
      )
    )
  })

export const rm = ({ item, json }: Parsed<typeof rmConfig>) =>
  Effect.gen(function* () {
    const removed = yield* (yield* Vault).removeItem(item)
    if (!removed) return yield* new CommandFailed({ code: "VAULT_ITEM_NOT_FOUND", detail: `no item ${item}` })
    yield* emit(json, { removed: item }, (r) => `removed ${r.removed}`)
  })

export const create = ({ actions, consumer, force, hosts, items, json, out, ttl }: Parsed<typeof createConfig>) =>
  Effect.gen(function* () {
    const { credentialFile, grant } = yield* (yield* GrantIssuer)
      .issue({ consumer, actions, items, hosts, ttlMillis: ttl, out, force })
      .pipe(Effect.catchAll(failWith(json)))
    yield* emit(json, { grant: grantJson(grant), credential_file: credentialFile }, (r) =>
      [
        `granted ${r.grant.id} to ${r.grant.consumer} until ${r.grant.expires_at}`,
        `credential: ${r.credential_file}`
      ].join("\n")
    )
  })

export const grants = ({ json }: { readonly json: boolean }) =>
  Effect.gen(function* () {
    const all = yield* (yield* Vault).listGrants
    yield* emit(json, all.map(grantJson), (rows) =>
      table(
        ["ID", "CONSUMER", "ACTIONS", "HOSTS", "ITEMS", "EXPIRES", "REVOKED"],
        rows.map((g) => [
          g.id,
          g.consumer,
          g.actions.join(","),
          g.hosts.join(","),
          g.items.join(","),
          g.expires_at,
          g.revoked_at ?? "-"
        ])
      )
    )
  })

export const revoke = ({ id, json }: Parsed<typeof revokeConfig>) =>
  Effect.gen(function* () {
    if (!(yield* (yield* Vault).revokeGrant(id)))
      return yield* new CommandFailed({ code: "VAULT_GRANT_NOT_FOUND", detail: `no grant ${id}` })
    yield* emit(json, { revoked: id }, (r) => `revoked ${r.revoked}; its tokens are refused from now on`)
  })
