import { Layer } from "effect"
import { ClusterStatus } from "../services/platform/ClusterStatus.js"
import { Database } from "../services/platform/Database.js"
import { Leases } from "../services/platform/Leases.js"
import { SqlWithSettingsLive } from "./Sql.js"

/** The database's own description (dialect, file, migrations applied) on the embedded defaults: `ctl db status`. */
export const DatabaseLive = Database.Default.pipe(Layer.provideMerge(SqlWithSettingsLive))

/** The lease table alone on the embedded defaults: `ctl lease`. */
export const LeasesLive = Leases.Default.pipe(Layer.provideMerge(SqlWithSettingsLive))

/** The runners as the shared database records them, on the configured database: `ctl cluster status`. */
export const ClusterStatusLive = ClusterStatus.Default.pipe(Layer.provideMerge(SqlWithSettingsLive))
