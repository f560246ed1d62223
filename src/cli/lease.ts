import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { type Lease, LeaseHolder, LeaseKey } from "../contracts/fleet/LeaseKeeper.js"
import { ServicesLive } from "../layers/Live.js"
import { Leases } from "../services/platform/Leases.js"
import { decodeArgument, decodeOption, durationOption, emit, failWith, iso, json, table } from "./Output.js"

const key = Args.text({ name: "KEY" }).pipe(
  Args.mapEffect(decodeArgument(LeaseKey, "KEY")),
  Args.withDescription("The lease key")
)
const holder = Options.text("holder").pipe(
  Options.mapEffect(decodeOption(LeaseHolder, "--holder")),
  Options.withDescription("Who holds the lease (a host, a run id, a person)")
)
const ttl = durationOption("ttl").pipe(
  Options.withDefault(5 * 60_000),
  Options.withDescription("How long the lease lasts unless renewed: 30s, 5m, 2h (default 5m)")
)

const describe = (lease: Lease) =>
  `${lease.key} held by ${lease.holder} (fence ${lease.fence}) until ${iso(lease.expiresAt)}`

const toJson = (lease: Lease) => ({
  key: lease.key,
  holder: lease.holder,
  fence: lease.fence,
  acquired_at: iso(lease.acquiredAt),
  renewed_at: iso(lease.renewedAt),
  expires_at: iso(lease.expiresAt)
})

const acquire = Command.make("acquire", { key, holder, ttl, json }, ({ holder, json, key, ttl }) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.acquire(key, holder, ttl)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => describe(lease))),
    Effect.catchTags({ LeaseHeld: failWith(json) })
  )
).pipe(Command.withDescription("Take a lease, or extend it if you already hold it; fails while another holds it"))

const renew = Command.make("renew", { key, holder, ttl, json }, ({ holder, json, key, ttl }) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.renew(key, holder, ttl)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => describe(lease))),
    Effect.catchTags({ LeaseHeld: failWith(json), LeaseNotHeld: failWith(json) })
  )
).pipe(Command.withDescription("Extend a lease you hold"))

const release = Command.make("release", { key, holder, json }, ({ holder, json, key }) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.release(key, holder)),
    Effect.flatMap((lease) => emit(json, toJson(lease), () => `released ${lease.key} (fence ${lease.fence})`)),
    Effect.catchTags({ LeaseHeld: failWith(json), LeaseNotHeld: failWith(json) })
  )
).pipe(Command.withDescription("Give a lease up before it expires"))

const all = Options.boolean("all").pipe(Options.withDescription("Include expired and released leases"))

const list = Command.make("list", { all, json }, ({ all, json }) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.list({ includeExpired: all })),
    Effect.flatMap((leases) =>
      emit(json, leases.map(toJson), (rows) =>
        rows.length === 0
          ? "no leases"
          : table(
              ["KEY", "HOLDER", "FENCE", "EXPIRES"],
              rows.map((l) => [l.key, l.holder, String(l.fence), l.expires_at])
            )
      )
    )
  )
).pipe(Command.withDescription("List active leases"))

const status = Command.make("status", { key, json }, ({ json, key }) =>
  Leases.pipe(
    Effect.flatMap((leases) => leases.get(key)),
    Effect.flatMap((lease) =>
      emit(json, Option.match(lease, { onNone: () => null, onSome: toJson }), () =>
        Option.match(lease, { onNone: () => `${key} is free`, onSome: describe })
      )
    )
  )
).pipe(Command.withDescription("Show who holds a lease"))

export const lease = Command.make("lease").pipe(
  Command.withDescription("Fenced leases: exclusive, expiring claims on a key"),
  Command.withSubcommands([acquire, renew, release, list, status]),
  Command.provide(ServicesLive)
)
