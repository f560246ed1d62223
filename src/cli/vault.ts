import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import type { Grant } from "../contracts/vault/Schemas.js"
import { ServicesLive } from "../layers/Live.js"
import { GrantIssuer } from "../services/fleet/grants/GrantIssuer.js"
import { parseItemInput } from "../services/platform/vault/ItemInput.js"
import { Vault } from "../services/platform/vault/Vault.js"
import { CommandFailed, durationOption, emit, failWith, iso, json, table } from "./Output.js"

/** Secret values come on stdin, never in argv. */
const readStdin = Effect.tryPromise({
  try: async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString("utf8")
  },
  catch: (error) => new CommandFailed({ detail: `could not read stdin: ${(error as Error).message}` })
})

const itemName = Args.text({ name: "ITEM" })

const put = Command.make(
  "put",
  {
    item: itemName,
    field: Options.text("field").pipe(
      Options.optional,
      Options.withDescription("Store stdin verbatim as this one field (multi-line values such as keys)")
    ),
    merge: Options.boolean("merge").pipe(
      Options.withDescription("Keep the item's other fields (without it, the item is replaced by what stdin holds)")
    ),
    json
  },
  ({ field, item, json, merge }) =>
    Effect.gen(function* () {
      const vault = yield* Vault
      const given = yield* parseItemInput(yield* readStdin, Option.getOrUndefined(field)).pipe(
        Effect.catchAll(failWith(json))
      )
      const existing = merge ? yield* vault.getItem(item).pipe(Effect.orElseSucceed(() => ({}))) : {}
      const fields = { ...existing, ...given }
      yield* vault.putItem(item, fields).pipe(Effect.catchAll(failWith(json)))
      yield* emit(
        json,
        { item, fields: Object.keys(fields).sort() },
        (r) => `stored ${r.item} (${r.fields.join(", ")})`
      )
    })
).pipe(
  Command.withDescription(
    "Store an item (replacing it, or with --merge adding to it); its fields are read from stdin: name=value lines, a JSON object, or with --field NAME one verbatim value"
  )
)

const get = Command.make(
  "get",
  { item: itemName, field: Options.text("field").pipe(Options.optional), json },
  ({ field, item, json }) =>
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
).pipe(Command.withDescription("Print an item's fields (operators only; consumers read through tokens)"))

const list = Command.make("list", { json }, ({ json }) =>
  Effect.gen(function* () {
    const items = yield* (yield* Vault).listItems
    yield* emit(json, items, (rows) =>
      table(
        ["ITEM", "FIELDS"],
        rows.map((r) => [r.name, r.fields.join(", ")])
      )
    )
  })
).pipe(Command.withDescription("List items and their field names (no values)"))

const rm = Command.make("rm", { item: itemName, json }, ({ item, json }) =>
  Effect.gen(function* () {
    const removed = yield* (yield* Vault).removeItem(item)
    if (!removed) return yield* new CommandFailed({ code: "VAULT_ITEM_NOT_FOUND", detail: `no item ${item}` })
    yield* emit(json, { removed: item }, (r) => `removed ${r.removed}`)
  })
).pipe(Command.withDescription("Remove an item"))

const grantJson = (grant: Grant) => ({
  ...grant,
  created_at: iso(grant.created_at),
  expires_at: iso(grant.expires_at),
  revoked_at: grant.revoked_at === null ? null : iso(grant.revoked_at)
})

const create = Command.make(
  "create",
  {
    consumer: Options.text("consumer").pipe(Options.withDescription("Who will use the grant")),
    actions: Options.text("action").pipe(
      Options.repeated,
      Options.withDescription("A registry action, e.g. host-health-write (repeatable)")
    ),
    items: Options.text("item").pipe(
      Options.repeated,
      Options.withDescription("An item of the vault it may read (repeatable)")
    ),
    hosts: Options.text("host").pipe(
      Options.repeated,
      Options.withDescription("A registry target its actions cover (repeatable)")
    ),
    ttl: durationOption("ttl").pipe(
      Options.withDefault(30 * 86_400_000),
      Options.withDescription("How long the grant lives: 1h, 30d (default 30d)")
    ),
    // Text, not Options.file: the issuer refuses an existing path of any kind (CREDENTIAL_FILE_EXISTS) and reports
    // one it cannot write (CREDENTIAL_WRITE_FAILED); the platform's own check threw on a path under a file.
    out: Options.text("out").pipe(Options.withDescription("Where to write the grant credential (mode 0600)")),
    force: Options.boolean("force").pipe(
      Options.withDescription("Replace the credential file if it exists (refused otherwise)")
    ),
    json
  },
  ({ actions, consumer, force, hosts, items, json, out, ttl }) =>
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
).pipe(Command.withDescription("Create a grant and write its credential file (owner-only)"))

const grants = Command.make("list", { json }, ({ json }) =>
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
).pipe(Command.withDescription("List grants (no secrets)"))

const revoke = Command.make("revoke", { id: Args.text({ name: "GRANT_ID" }), json }, ({ id, json }) =>
  Effect.gen(function* () {
    if (!(yield* (yield* Vault).revokeGrant(id)))
      return yield* new CommandFailed({ code: "VAULT_GRANT_NOT_FOUND", detail: `no grant ${id}` })
    yield* emit(json, { revoked: id }, (r) => `revoked ${r.revoked}; its tokens are refused from now on`)
  })
).pipe(Command.withDescription("Revoke a grant and every token issued under it"))

export const vault = Command.make("vault").pipe(
  Command.withDescription("The embedded secret vault: items, grants"),
  Command.withSubcommands([
    Command.make("item").pipe(Command.withSubcommands([put, get, list, rm])),
    Command.make("grant").pipe(Command.withSubcommands([create, grants, revoke]))
  ]),
  Command.provide(ServicesLive)
)
