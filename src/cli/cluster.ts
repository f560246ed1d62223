import { Command } from "@effect/cli"
import { ClusterStatusLive } from "./Layers.js"
import { lazyRun } from "./Lazy.js"
import { json } from "./Output.js"

const impl = lazyRun(() => import("./run/cluster.js"))

const status = Command.make("status", { json }, (args) => impl((m) => m.status(args))).pipe(
  Command.withDescription(
    "Show the actor runtime's runners as the database knows them: health, heartbeat, shards and known actors each holds"
  )
)

export const cluster = Command.make("cluster").pipe(
  Command.withDescription("The actor runtime: one embedded runner, or several runners on one PostgreSQL database"),
  Command.withSubcommands([status.pipe(Command.provide(ClusterStatusLive))])
)
