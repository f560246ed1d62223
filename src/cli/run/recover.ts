import { Effect, Option } from "effect"
import { BinaryRecovery, type RecoveryAnswer } from "../../services/fleet/control/releases/BinaryRecovery.js"
import { VersionDeclaration } from "../../services/fleet/control/releases/VersionDeclaration.js"
import type { Parsed } from "../Lazy.js"
import { ExitWith, emit, failWith } from "../Output.js"
import type { declareVersionConfig, recoverConfig, releaseConfig } from "../recover.js"

const view = (answer: RecoveryAnswer) =>
  [
    `${answer.target}${answer.release === null ? "" : ` ← ${answer.release.product} ${answer.release.version}`}: ${answer.ok ? "recovered" : "FAILED"}${answer.rolled_back ? " (rolled back)" : ""}`,
    `  registry    ${answer.registry.freshness} ${answer.registry.digest.slice(0, 12)}`,
    `  object API  ${answer.object_api.status}${answer.object_api.detail === "" ? "" : ` — ${answer.object_api.detail}`}`,
    ...answer.steps.map((s) => `  ${s.ok ? "✓" : "✗"} ${s.step.padEnd(9)} ${s.detail}`)
  ].join("\n")

export const recover = ({ bundledRegistry, json, release, target }: Parsed<typeof recoverConfig>) =>
  Effect.gen(function* () {
    const answer = yield* (yield* BinaryRecovery)
      .recover({ target, release, bundledRegistry })
      .pipe(Effect.catchTag("RecoveryRefused", failWith(json)))
    yield* emit(json, answer, view)
    if (!answer.ok) return yield* new ExitWith({ code: 1 })
  })

export const release = ({ binary, json, target, version }: Parsed<typeof releaseConfig>) =>
  Effect.gen(function* () {
    const answer = yield* (yield* BinaryRecovery)
      .recover({ target, release: Option.some(version), bundledRegistry: false, binary, hostRecovery: false })
      .pipe(Effect.catchTag("RecoveryRefused", failWith(json)))
    yield* emit(json, answer, view)
    if (!answer.ok) return yield* new ExitWith({ code: 1 })
  })

export const declareVersion = ({ binary, json, target, version }: Parsed<typeof declareVersionConfig>) =>
  Effect.gen(function* () {
    const declared = yield* (yield* VersionDeclaration)
      .declare(target, binary, version)
      .pipe(Effect.catchTag("DeclareRefused", failWith(json)))
    yield* emit(
      json,
      declared,
      (d) =>
        `${d.target} ${d.binary}: ${d.previous ?? "(none)"} → ${d.version} (registry ${d.digest_before.slice(0, 12)} → ${d.digest_after.slice(0, 12)}, audit ${d.audit_key})`
    )
  })
