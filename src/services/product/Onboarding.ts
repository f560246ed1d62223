import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Schema } from "effect"
import { OnboardingBundle, type OnboardingEvents, OnboardingEventsResult } from "../../contracts/product/Onboarding.js"
import { CodePointText, BoundedText as Text } from "../../contracts/shared/Text.js"
import { weakEtag } from "../platform/Etag.js"
import { formatIssues } from "../platform/Validation.js"
import { Assigner } from "./Assigner.js"
import { EventTimestamp, eventMillis } from "./EventTime.js"

export const OnboardingEvent = Schema.Struct({
  event_id: Text(128),
  // The same subject /assign and the bundle take (code points: 200 emoji are one subject there too).
  subject: CodePointText(256),
  step: Text(200),
  timestamp: EventTimestamp,
  props: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

const decodeEvent = Schema.decodeUnknownEither(OnboardingEvent, { errors: "all" })

/** Everything a fresh install needs in one call, and the steps it reports back. */
export class Onboarding extends Effect.Service<Onboarding>()("product/Onboarding", {
  effect: Effect.gen(function* () {
    const assigner = yield* Assigner
    const sql = yield* SqlClient.SqlClient

    /** Each journey's assignment exactly as /assign answers it, and an ETag over the assignments. */
    const bundle = Effect.fn("Onboarding.bundle")(function* (
      appId: string,
      platform: string,
      subject: string,
      clientKey: string | undefined
    ) {
      const assignments = yield* assigner.assignAll(appId, platform, subject, clientKey)
      const now = yield* Clock.currentTimeMillis
      const etag = weakEtag(
        JSON.stringify([appId, platform, Object.entries(assignments).sort(([a], [b]) => a.localeCompare(b))])
      )
      return {
        etag,
        bundle: new OnboardingBundle({
          app_id: appId,
          platform,
          generated_at: new Date(now).toISOString(),
          assignments
        })
      }
    })

    const record = Effect.fn("Onboarding.record")(function* (
      batch: typeof OnboardingEvents.Type,
      clientKey: string | undefined
    ) {
      yield* assigner.authorizedApp(batch.app_id, clientKey)
      const now = yield* Clock.currentTimeMillis
      const rejected: Array<{ index: number; reason: string }> = []
      const rows: Array<Record<string, string | number | null>> = []
      batch.events.forEach((candidate, index) => {
        const decoded = decodeEvent(candidate)
        if (Either.isLeft(decoded)) {
          rejected.push({
            index,
            reason: formatIssues(decoded.left, { limit: 3, withoutValues: true })
          })
          return
        }
        const event = decoded.right
        rows.push({
          app_id: batch.app_id,
          event_id: event.event_id,
          subject: event.subject,
          step: event.step,
          occurred_at: eventMillis(event.timestamp),
          props: event.props ? JSON.stringify(event.props) : null,
          received_at: now
        })
      })
      const inserted =
        rows.length === 0
          ? []
          : yield* sql<{ event_id: string }>`INSERT INTO onboarding_events ${sql.insert(rows)}
              ON CONFLICT (app_id, event_id) DO NOTHING RETURNING event_id`.pipe(Effect.orDie)
      return new OnboardingEventsResult({
        accepted: inserted.length,
        duplicates: rows.length - inserted.length,
        rejected
      })
    })

    return { bundle, record } as const
  })
}) {}
