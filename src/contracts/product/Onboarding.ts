import { Schema } from "effect"
import { BoundedText as Text } from "../shared/Text.js"
import { Assignment } from "./Assignment.js"

/** Onboarding on the wire: the bundle of a fresh install, the envelope of its step events and the answer. */

export class OnboardingBundle extends Schema.Class<OnboardingBundle>("OnboardingBundle")({
  app_id: Schema.String,
  platform: Schema.String,
  generated_at: Schema.String,
  assignments: Schema.Record({ key: Schema.String, value: Assignment })
}) {}

export const OnboardingEvents = Schema.Struct({
  app_id: Text(128),
  events: Schema.Array(Schema.Unknown).pipe(Schema.maxItems(500))
})

export class OnboardingEventsResult extends Schema.Class<OnboardingEventsResult>("OnboardingEventsResult")({
  accepted: Schema.Int,
  duplicates: Schema.Int,
  rejected: Schema.Array(Schema.Struct({ index: Schema.Int, reason: Schema.String }))
}) {}
