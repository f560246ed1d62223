import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import {
  AllMigrations,
  AppConfigTest,
  Database,
  Health,
  LeaseKeeperLive,
  Leases,
  migrationsLayer,
  singleRunner
} from "./keel.js"

/**
 * `LeaseKeeper` on the production wiring (the single runner with SQL runner and message storage) over `database`,
 * migrated: what a restart builds again on the same database.
 */
export const leaseKeeperRuntime = <E>(
  database: Layer.Layer<SqlClient.SqlClient, E>,
  settings: Parameters<typeof AppConfigTest>[0] = {}
) =>
  LeaseKeeperLive.pipe(
    Layer.provideMerge(singleRunner({ pollInterval: "100 millis", runnerStorage: "sql", terminationTimeout: 0 })),
    Layer.provideMerge(Layer.mergeAll(Leases.Default, Health.Default).pipe(Layer.provideMerge(Database.Default))),
    Layer.provideMerge(migrationsLayer(AllMigrations).pipe(Layer.provideMerge(database))),
    Layer.provideMerge(AppConfigTest(settings))
  )
