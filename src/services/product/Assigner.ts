import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import { AppNotFound, Assignment, CLIENT_KEY_HEADER, InvalidClientKey } from "../../contracts/product/Assignment.js"
import { GroupCommit } from "../platform/GroupCommit.js"
import { hotSpan } from "../platform/HotSpan.js"
import { buckets, chooseVariant } from "./Hashing.js"
import { type Experiment, JourneyRegistry } from "./JourneyRegistry.js"

/** "Not in an experiment": distinguishable from control, which is a variant like any other. */
export const emptyAssignment = new Assignment({ variant: null, config: {}, experimentId: null })

export interface AssignRequest {
  readonly appId: string
  readonly platform: string
  readonly surface: string
  readonly subject: string
  readonly clientKey: string | undefined
}

/** A new subject's hashed variant is stored; a stored one is returned untouched (sticky forever). */
const STORE_FIRST_ASSIGNMENT = `INSERT INTO experiment_assignments (experiment_id, subject, variant, assigned_at)
  VALUES (?, ?, ?, ?)
  ON CONFLICT (experiment_id, subject) DO UPDATE SET variant = experiment_assignments.variant
  RETURNING variant`

const STORED_ASSIGNMENT = "SELECT variant FROM experiment_assignments WHERE experiment_id = ? AND subject = ?"

/** One row per (experiment, subject): first and last exposure and a count. */
const RECORD_EXPOSURE = `INSERT INTO experiment_exposures
    (experiment_id, subject, variant, first_exposed_at, last_exposed_at, exposures)
  VALUES (?, ?, ?, ?, ?, 1)
  ON CONFLICT (experiment_id, subject) DO UPDATE SET
    last_exposed_at = excluded.last_exposed_at,
    exposures = experiment_exposures.exposures + 1`

const participating = (experiment: Experiment) => experiment.status === "running" && !experiment.kill_switch

/**
 * Sticky experiment assignment. The stored first assignment is the truth; the hash only decides a
 * subject's first assignment. The assignment and its exposure are written in one transaction.
 */
export class Assigner extends Effect.Service<Assigner>()("product/Assigner", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const groups = yield* GroupCommit
    const registry = yield* JourneyRegistry

    /** The app, once its publishable client key has been checked. */
    const authorizedApp = (appId: string, clientKey: string | undefined) =>
      Effect.gen(function* () {
        const app = yield* registry.app(appId)
        if (app === undefined) return yield* new AppNotFound({ app_id: appId, detail: `no app ${appId}` })
        if (clientKey === undefined || clientKey.trim() === "") {
          return yield* new InvalidClientKey({
            header: CLIENT_KEY_HEADER,
            reason: "missing",
            detail:
              `the ${CLIENT_KEY_HEADER} request header is missing: send one of app ${appId}'s publishable client keys ` +
              "(its client_keys in the product registry, KEEL_PRODUCT_REGISTRY; see docs/product-registry.md)"
          })
        }
        if (!app.client_keys.includes(clientKey)) {
          return yield* new InvalidClientKey({
            header: CLIENT_KEY_HEADER,
            reason: "unknown",
            detail:
              `${CLIENT_KEY_HEADER} is not a client key of app ${appId}: ` +
              "use one listed under the app's client_keys in the product registry"
          })
        }
        return app
      })

    /** Assigns within one experiment, recording the exposure in the same transaction. */
    const assignIn = (experiment: Experiment, subject: string) =>
      Effect.gen(function* () {
        if (!participating(experiment)) return emptyAssignment
        const now = yield* Clock.currentTimeMillis
        const bucket = buckets(experiment.id, subject)
        const hashed =
          bucket.traffic < experiment.traffic ? chooseVariant(experiment.variants, bucket.variant) : undefined
        return yield* groups
          .submit((db) =>
            Effect.gen(function* () {
              let variantName: string | undefined
              if (hashed !== undefined) {
                const rows = yield* db.all<{ variant: string }>(STORE_FIRST_ASSIGNMENT, [
                  experiment.id,
                  subject,
                  hashed.name,
                  now
                ])
                variantName = rows[0]?.variant
              } else {
                // Outside traffic today, but an earlier assignment still wins.
                const stored = yield* db.all<{ variant: string }>(STORED_ASSIGNMENT, [experiment.id, subject])
                variantName = stored[0]?.variant
              }
              if (variantName === undefined) return emptyAssignment
              // A stored variant the registry no longer lists has no config to serve: not in the experiment.
              const variant = experiment.variants.find((v) => v.name === variantName)
              if (variant === undefined) return emptyAssignment
              yield* db.run(RECORD_EXPOSURE, [experiment.id, subject, variant.name, now, now])
              return new Assignment({ variant: variant.name, config: variant.config, experimentId: experiment.id })
            })
          )
          .pipe(Effect.orDie)
      })

    const assign = hotSpan("Assigner.assign")(function* (request: AssignRequest) {
      const app = yield* authorizedApp(request.appId, request.clientKey)
      const journey = app.journeys.find((j) => j.platform === request.platform && j.surface === request.surface)
      if (journey?.experiment === undefined) return emptyAssignment
      return yield* assignIn(journey.experiment, request.subject)
    })

    /** Every journey of an app on a platform, each answered exactly as `assign` would. */
    const assignAll = Effect.fn("Assigner.assignAll")(function* (
      appId: string,
      platform: string,
      subject: string,
      clientKey: string | undefined
    ) {
      const app = yield* authorizedApp(appId, clientKey)
      const assignments: Record<string, Assignment> = {}
      for (const journey of app.journeys.filter((j) => j.platform === platform)) {
        assignments[journey.surface] =
          journey.experiment === undefined ? emptyAssignment : yield* assignIn(journey.experiment, subject)
      }
      return assignments
    })

    const exposure = (experimentId: string, subject: string) =>
      sql<{ variant: string; exposures: number; first_exposed_at: number; last_exposed_at: number }>`
        SELECT variant, exposures, first_exposed_at, last_exposed_at FROM experiment_exposures
        WHERE experiment_id = ${experimentId} AND subject = ${subject}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    return { assign, assignAll, authorizedApp, exposure } as const
  }),
  dependencies: [GroupCommit.Default]
}) {}
