import { Args, Command, Options } from "@effect/cli"
import { FleetServicesLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { durationOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/vault.js"))

const itemName = Args.text({ name: "ITEM" })

export const putConfig = {
  item: itemName,
  field: Options.text("field").pipe(
    Options.optional,
    Options.withDescription("Store stdin verbatim as this one field (multi-line values such as keys)")
  ),
  merge: Options.boolean("merge").pipe(
    Options.withDescription("Keep the item's other fields (without it, the item is replaced by what stdin holds)")
  ),
  json
}

const put = Command.make("put", putConfig, (args) => impl((m) => m.put(args))).pipe(
  Command.withDescription(
    "Store an item (replacing it, or with --merge adding to it); its fields are read from stdin: name=value lines, a JSON object, or with --field NAME one verbatim value"
  )
)

export const getConfig = { item: itemName, field: Options.text("field").pipe(Options.optional), json }

const get = Command.make("get", getConfig, (args) => impl((m) => m.get(args))).pipe(
  Command.withDescription("Print an item's fields (operators only; consumers read through tokens)")
)

const list = Command.make("list", { json }, (args) => impl((m) => m.list(args))).pipe(
  Command.withDescription("List items and their field names (no values)")
)

export const rmConfig = { item: itemName, json }

const rm = Command.make("rm", rmConfig, (args) => impl((m) => m.rm(args))).pipe(
  Command.withDescription("Remove an item")
)

export const createConfig = {
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
}

const create = Command.make("create", createConfig, (args) => impl((m) => m.create(args))).pipe(
  Command.withDescription("Create a grant and write its credential file (owner-only)")
)

const grants = Command.make("list", { json }, (args) => impl((m) => m.grants(args))).pipe(
  Command.withDescription("List grants (no secrets)")
)

export const revokeConfig = { id: Args.text({ name: "GRANT_ID" }), json }

const revoke = Command.make("revoke", revokeConfig, (args) => impl((m) => m.revoke(args))).pipe(
  Command.withDescription("Revoke a grant and every token issued under it")
)

export const vault = Command.make("vault").pipe(
  Command.withDescription("The embedded secret vault: items, grants"),
  Command.withSubcommands([
    Command.make("item").pipe(Command.withSubcommands([put, get, list, rm])),
    Command.make("grant").pipe(Command.withSubcommands([create, grants, revoke]))
  ]),
  Command.provide(FleetServicesLive)
)
