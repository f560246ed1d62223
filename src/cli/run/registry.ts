import * as fs from "node:fs"
import { Effect, Option } from "effect"
import {
  type RegistryConflict,
  type RegistryWrite,
  type RegistryWriteFailed,
  RegistryWriter
} from "../../services/fleet/control/registry/RegistryWriter.js"
import {
  FleetRegistry,
  type FleetRegistryInvalid,
  type FleetRegistrySnapshot,
  type FleetRegistryUnavailable
} from "../../services/fleet/shared/registry/Registry.js"
import type { Parsed } from "../Lazy.js"
import { CommandFailed, emit, iso, table } from "../Output.js"
import type { applyConfig, setConfig, showConfig, validateConfig } from "../registry.js"

const summary = (snapshot: FleetRegistrySnapshot) => ({
  freshness: snapshot.freshness,
  ...(snapshot.cachedBecause === undefined ? {} : { cached_because: snapshot.cachedBecause }),
  source: snapshot.source,
  digest: snapshot.digest,
  loaded_at: iso(snapshot.loadedAt),
  targets: snapshot.registry.targets.map((t) => ({
    name: t.name,
    os: t.os,
    channel: t.channel === "local" ? "local" : `ssh ${t.channel.ssh.user}@${t.channel.ssh.host}:${t.channel.ssh.port}`,
    roles: t.roles,
    services: t.services.map((s) => s.name),
    disk_cleanup: t.disk_cleanup?.mode ?? "default (report)"
  })),
  registry: snapshot.registry
})

const problemsOf = (error: FleetRegistryInvalid | FleetRegistryUnavailable) =>
  error._tag === "FleetRegistryInvalid" ? error.problems : []

/** Failures of the registry carry their field paths; print every one. */
const refuse = (asJson: boolean) => (error: FleetRegistryInvalid | FleetRegistryUnavailable) =>
  Effect.zipRight(
    asJson
      ? emit(true, { error: { code: error.code, detail: error.detail, problems: problemsOf(error) } }, () => "")
      : emit(false, problemsOf(error), (problems) => problems.map((p) => `  ${p}`).join("\n")),
    Effect.fail(new CommandFailed({ detail: error.detail }))
  )

/** A write's refusal: a conflict says the current digest; invalid text lists its problems by path. */
const refuseWrite =
  (asJson: boolean) =>
  (error: RegistryConflict | RegistryWriteFailed | FleetRegistryInvalid | FleetRegistryUnavailable) =>
    error._tag === "RegistryConflict" || error._tag === "RegistryWriteFailed"
      ? Effect.zipRight(
          asJson
            ? emit(
                true,
                {
                  error: {
                    code: error.code,
                    detail: error.detail,
                    ...(error._tag === "RegistryConflict" ? { current: error.current } : {})
                  }
                },
                () => ""
              )
            : Effect.void,
          Effect.fail(new CommandFailed({ detail: error.detail }))
        )
      : refuse(asJson)(error)

const written = (w: RegistryWrite) =>
  `registry written: ${w.digest_before.slice(0, 16)} → ${w.digest_after.slice(0, 16)}${
    w.source.commit === undefined ? "" : ` (commit ${w.source.commit.slice(0, 12)})`
  }; digest ${w.digest_after}`

export const show = ({ bundledRegistry, cached, json }: Parsed<typeof showConfig>) =>
  Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const reading: Effect.Effect<FleetRegistrySnapshot, FleetRegistryInvalid | FleetRegistryUnavailable> =
      bundledRegistry ? registry.bundled() : registry.read({ allowCached: cached })
    const snapshot = yield* reading.pipe(Effect.catchAll(refuse(json)))
    const body = summary(snapshot)
    yield* emit(json, body, (s) =>
      [
        `registry ${s.source.location}${s.source.commit ? ` @ ${s.source.commit.slice(0, 12)}` : ""} (${s.freshness}${
          s.freshness === "cached" ? `: ${s.cached_because}` : ""
        }), digest ${s.digest}, loaded ${s.loaded_at}`,
        table(
          ["TARGET", "OS", "CHANNEL", "ROLES", "SERVICES", "DISK CLEANUP"],
          s.targets.map((t) => [t.name, t.os, t.channel, t.roles.join(","), t.services.join(","), t.disk_cleanup])
        )
      ].join("\n")
    )
  })

export const validate = ({ file, json }: Parsed<typeof validateConfig>) =>
  Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const parsed = Option.isSome(file)
      ? yield* registry
          .parse(fs.readFileSync(file.value, "utf8"), file.value)
          .pipe(Effect.map((doc) => ({ source: file.value, targets: doc.targets.length })))
      : yield* registry
          .load()
          .pipe(Effect.map((s) => ({ source: s.source.location, targets: s.registry.targets.length })))
    yield* emit(json, { valid: true, ...parsed }, (r) => `${r.source}: valid, ${r.targets} target(s)`)
  }).pipe(Effect.catchAll(refuse(json)))

export const set = ({ expect, file, json, reason }: Parsed<typeof setConfig>) =>
  Effect.gen(function* () {
    const write = yield* (yield* RegistryWriter).set(expect, fs.readFileSync(file, "utf8"), reason)
    yield* emit(json, write, written)
  }).pipe(Effect.catchAll(refuseWrite(json)))

export const apply = ({ expect, file, json, reason }: Parsed<typeof applyConfig>) =>
  Effect.gen(function* () {
    const write = yield* (yield* RegistryWriter).apply(expect, fs.readFileSync(file, "utf8"), reason)
    yield* emit(json, write, written)
  }).pipe(Effect.catchAll(refuseWrite(json)))
