import { Command } from "@effect/cli"
import { packageVersion } from "../services/platform/Package.js"
import { blog } from "./blog.js"
import { cluster } from "./cluster.js"
import { config } from "./config.js"
import { db } from "./db.js"
import { fleet } from "./fleet.js"
import { gt } from "./gt.js"
import { host } from "./host.js"
import { diskCleanup, space } from "./janitor.js"
import { lease } from "./lease.js"
import { machine } from "./machine.js"
import { market } from "./market.js"
import { optimize } from "./optimize.js"
import { overview } from "./overview.js"
import { product } from "./product.js"
import { registry } from "./registry.js"
import { release } from "./release.js"
import { serve } from "./serve.js"
import { service } from "./service.js"
import { vault } from "./vault.js"

/** The whole `ctl` tree, assembled in one call (a second withSubcommands would replace the first). */
export const ctl = Command.make("ctl").pipe(
  Command.withDescription("Keel: marketplace, ground truth, product API and fleet operations on one runtime"),
  Command.withSubcommands([
    serve,
    db,
    cluster,
    gt,
    market,
    registry,
    vault,
    host,
    machine,
    overview,
    fleet,
    service,
    optimize,
    release,
    space,
    diskCleanup,
    lease,
    blog,
    product,
    config
  ])
)

/** Runs `ctl` on an argv (`["node", "ctl", ...args]`); the version is read when it runs, not on import. */
export const runCtl = (argv: ReadonlyArray<string>) =>
  Command.run(ctl, { name: "ctl", version: packageVersion() })(argv)
