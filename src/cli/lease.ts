import { Args, Command, Options } from "@effect/cli"
import { LeaseHolder, LeaseKey } from "../contracts/fleet/LeaseNames.js"
import { LeasesLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { decodeArgument, decodeOption, durationOption, json } from "./Output.js"

const impl = lazyRun(() => import("./run/lease.js"))

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

export const acquireConfig = { key, holder, ttl, json }

const acquire = Command.make("acquire", acquireConfig, (args) => impl((m) => m.acquire(args))).pipe(
  Command.withDescription("Take a lease, or extend it if you already hold it; fails while another holds it")
)

export const renewConfig = { key, holder, ttl, json }

const renew = Command.make("renew", renewConfig, (args) => impl((m) => m.renew(args))).pipe(
  Command.withDescription("Extend a lease you hold")
)

export const releaseConfig = { key, holder, json }

const release = Command.make("release", releaseConfig, (args) => impl((m) => m.release(args))).pipe(
  Command.withDescription("Give a lease up before it expires")
)

const all = Options.boolean("all").pipe(Options.withDescription("Include expired and released leases"))

export const listConfig = { all, json }

const list = Command.make("list", listConfig, (args) => impl((m) => m.list(args))).pipe(
  Command.withDescription("List active leases")
)

export const statusConfig = { key, json }

const status = Command.make("status", statusConfig, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription("Show who holds a lease")
)

export const lease = Command.make("lease").pipe(
  Command.withDescription("Fenced leases: exclusive, expiring claims on a key"),
  Command.withSubcommands([acquire, renew, release, list, status]),
  Command.provide(LeasesLive)
)
