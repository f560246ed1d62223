import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { retryBusy } from "../../../platform/Database.js"
import { orDieSql } from "../../../platform/SqlEdge.js"

/** A version (or one of its platform identities) is reserved for another source revision: never reassigned. */
export class VersionReserved extends Schema.TaggedError<VersionReserved>()("VersionReserved", {
  code: Schema.Literal("VERSION_RESERVED"),
  product: Schema.String,
  version: Schema.String,
  platform: Schema.String,
  revision: Schema.String,
  detail: Schema.String
}) {}

/** The catalog already records this version with another manifest. */
export class CatalogConflict extends Schema.TaggedError<CatalogConflict>()("CatalogConflict", {
  code: Schema.Literal("CATALOG_CONFLICT"),
  detail: Schema.String
}) {}

export interface CatalogEntry {
  readonly product: string
  readonly version: string
  readonly channel: string
  readonly platform: string
  readonly revision: string
  readonly tree: string
  readonly source_sha256: string
  readonly manifest_sha256: string
  readonly key_id: string
  readonly created_at: string
}

export interface Reservation {
  readonly product: string
  readonly version: string
  /** `*` reserves the version itself; a platform name one of its platform identities. */
  readonly platform: string
  readonly revision: string
}

/** A submitted run's source and manifest identity (before anything is built). */
export interface Submission {
  readonly run_id: string
  readonly product: string
  readonly version: string
  readonly channel: string
  readonly platform: string
  readonly revision: string
  readonly tree: string
  readonly source_sha256: string
  readonly source_size: number
  readonly manifest_sha256: string
}

/** The version itself, as a reservation's platform. */
export const WHOLE_VERSION = "*"

/**
 * The release catalog (SQL): the published versions with their source and manifest identity, and the
 * reservations that bind a version and its platform identities to one source revision forever.
 */
export class ReleaseCatalog extends Effect.Service<ReleaseCatalog>()("fleet/ReleaseCatalog", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Reserves the version and each platform identity for `revision`; already reserved for it is fine. */
    const reserve = (product: string, version: string, platforms: ReadonlyArray<string>, revision: string) =>
      retryBusy(
        sql.withTransaction(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            for (const platform of [WHOLE_VERSION, ...platforms]) {
              // Insert first, then read who holds it: a concurrent reserve of the same identity (PostgreSQL) waits
              // on the primary key and then reads the winner's revision — a typed refusal, never a 23505 defect.
              yield* sql`INSERT INTO release_reservations (product, version, platform, revision, reserved_at)
                VALUES (${product}, ${version}, ${platform}, ${revision}, ${now}) ON CONFLICT DO NOTHING`
              const rows = yield* sql<{ revision: string }>`SELECT revision FROM release_reservations
                WHERE product = ${product} AND version = ${version} AND platform = ${platform}`
              const held = rows[0]?.revision
              if (held !== undefined && held !== revision)
                return yield* new VersionReserved({
                  code: "VERSION_RESERVED",
                  product,
                  version,
                  platform,
                  revision: held,
                  detail: `${product} ${version}${platform === WHOLE_VERSION ? "" : ` (${platform})`} is reserved for source revision ${held}, not ${revision}: a used version is never reassigned`
                })
            }
          })
        )
      ).pipe(orDieSql)

    /** Records a published version; the same record again is a no-op, another manifest a conflict. */
    const record = (entry: CatalogEntry) =>
      retryBusy(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          // Insert first (as reserve): a concurrent record of the same version waits on the key, then compares.
          const inserted = yield* sql`INSERT INTO release_catalog ${sql.insert({ ...entry, recorded_at: now })}
            ON CONFLICT DO NOTHING RETURNING product`
          if (inserted.length > 0) return "recorded" as const
          const existing = yield* sql<{ manifest_sha256: string }>`SELECT manifest_sha256 FROM release_catalog
            WHERE product = ${entry.product} AND version = ${entry.version}`
          if (existing[0] !== undefined) {
            if (existing[0].manifest_sha256 === entry.manifest_sha256) return "present" as const
            return yield* new CatalogConflict({
              code: "CATALOG_CONFLICT",
              detail: `the catalog records ${entry.product} ${entry.version} with manifest ${existing[0].manifest_sha256}, not ${entry.manifest_sha256}`
            })
          }
          return yield* Effect.dieMessage(`${entry.product} ${entry.version} was neither recorded nor found`)
        })
      ).pipe(orDieSql)

    /** Records a run's submission; the same run again is a no-op (its first record stays). */
    const submitted = (submission: Submission) =>
      retryBusy(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql`INSERT INTO release_submissions ${sql.insert({ ...submission, submitted_at: now })}
            ON CONFLICT (run_id) DO NOTHING`
        })
      ).pipe(orDieSql)

    const submissions = sql<Submission>`SELECT run_id, product, version, channel, platform, revision, tree,
        source_sha256, source_size, manifest_sha256 FROM release_submissions ORDER BY product, version, run_id`.pipe(
      Effect.map((rows) => rows.map((row) => ({ ...row, source_size: Number(row.source_size) }))),
      Effect.orDie
    )

    const entries = sql<CatalogEntry>`SELECT product, version, channel, platform, revision, tree, source_sha256,
        manifest_sha256, key_id, created_at FROM release_catalog ORDER BY product, version`.pipe(Effect.orDie)

    const reservations = sql<Reservation>`SELECT product, version, platform, revision FROM release_reservations
        ORDER BY product, version, platform`.pipe(Effect.orDie)

    return { reserve, record, submitted, submissions, entries, reservations } as const
  })
}) {}
