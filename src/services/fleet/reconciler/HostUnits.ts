import { Context, Duration, Effect, Layer, Schema } from "effect"
import { type UnitState, UnitState as UnitStateSchema } from "../../../contracts/fleet/Beacon.js"
import { RemoteCtl } from "../RemoteCtl.js"
import type { Target } from "../registry/Schema.js"
import { makeMemoryServiceManager } from "../units/MemoryServiceManager.js"
import {
  type DeclaredUnit,
  type EnsureResult,
  ServiceManager,
  UnitCommandFailed,
  UnitPreflightRejected
} from "../units/ServiceManager.js"
import type { UnitDefinition } from "../units/UnitRender.js"

/** The host could not be asked (its channel failed, or its answer was unreadable): nothing ran there. */
export class HostUnreachable extends Schema.TaggedError<HostUnreachable>()("HostUnreachable", {
  target: Schema.String,
  detail: Schema.String
}) {}

export type EndpointProbe = "observed" | "unreachable"

type Ensured = Effect.Effect<EnsureResult, UnitCommandFailed | UnitPreflightRejected | HostUnreachable>

/**
 * A target's units as the reconciler reaches them: on a `local` target this host's service manager, on
 * another host `ctl service … --here --json` through its channel (RemoteCtl: argv, never a shell string).
 * `probe` asks whether an endpoint answers, from a consumer host.
 */
export class HostUnits extends Context.Tag("fleet/HostUnits")<
  HostUnits,
  {
    readonly inspect: (target: Target, unit: DeclaredUnit) => Effect.Effect<UnitState, HostUnreachable>
    readonly ensure: (target: Target, definition: UnitDefinition) => Ensured
    readonly kick: (target: Target, definition: UnitDefinition) => Ensured
    readonly reassertTimer: (target: Target, unit: DeclaredUnit) => Ensured
    readonly probe: (from: Target, url: string) => Effect.Effect<EndpointProbe, HostUnreachable>
  }
>() {}

/** How long an endpoint probe may take (the sweep's per-probe budget, like a gates read). */
export const PROBE_BUDGET = Duration.seconds(5)

/** Whether `url` answers HTTP at all (any status is an observation); refused, timed out or unresolvable is not. */
export const probeUrl = (url: string, budget: Duration.DurationInput = PROBE_BUDGET) =>
  Effect.promise(async (): Promise<EndpointProbe> => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(Duration.toMillis(budget)), redirect: "manual" })
      await response.body?.cancel()
      return "observed"
    } catch {
      return "unreachable"
    }
  })

/** What `ctl service <verb> --here --json` prints. */
export const HereAnswer = Schema.Union(
  Schema.Struct({
    ok: Schema.Literal(true),
    change: Schema.optional(Schema.Literal("created", "reloaded", "restarted", "kicked", "reasserted")),
    unit: Schema.optional(Schema.String),
    state: Schema.optional(UnitStateSchema),
    probe: Schema.optional(Schema.Literal("observed", "unreachable"))
  }),
  Schema.Struct({
    ok: Schema.Literal(false),
    error: Schema.Struct({
      _tag: Schema.String,
      command: Schema.optional(Schema.String),
      detail: Schema.String
    })
  })
)

/**
 * The command lines the control plane runs on a host's `ctl` for its units (each one is run over a real ssh channel
 * by test/fleet/here-commands-remote.test.ts): a unit verb on the host's service manager, and an endpoint probe
 * from the host (`service verify --here --url`, the CLI's only probe: it takes no `--target`).
 */
export const unitHereArgs = (verb: "show" | "ensure" | "kick" | "reassert", service: string, target: string) => [
  "service",
  verb,
  service,
  "--target",
  target,
  "--here",
  "--json"
]
export const probeHereArgs = (url: string) => ["service", "verify", "--here", "--url", url, "--json"]

export const HostUnitsLive = Layer.effect(
  HostUnits,
  Effect.gen(function* () {
    const local = yield* ServiceManager
    const remote = yield* RemoteCtl

    /** Runs `argv` on the target's `ctl`; a failure it reports is typed by its `_tag` (`unit` and `verb` name it). */
    const ask = (target: Target, argv: ReadonlyArray<string>, verb: string, unit: string) =>
      Effect.gen(function* () {
        const answer = yield* remote
          .runJson(target, argv, 120_000)
          .pipe(Effect.mapError((error) => new HostUnreachable({ target: target.name, detail: error.detail })))
        const decoded = yield* Schema.decodeUnknown(HereAnswer)(answer.json).pipe(
          Effect.mapError(
            () => new HostUnreachable({ target: target.name, detail: `${target.name} answered an unknown document` })
          )
        )
        if (decoded.ok) return decoded
        const { _tag, command, detail } = decoded.error
        if (_tag === "UnitCommandFailed")
          return yield* new UnitCommandFailed({ unit, command: command ?? verb, detail })
        if (_tag === "UnitPreflightRejected") return yield* new UnitPreflightRejected({ unit, detail })
        return yield* new HostUnreachable({ target: target.name, detail })
      })

    /** The remote's answer to ensure/kick/reassert: what it did and the unit read back. */
    const remoteChange = (target: Target, verb: "ensure" | "kick" | "reassert", unit: DeclaredUnit): Ensured =>
      Effect.flatMap(ask(target, unitHereArgs(verb, unit.name, target.name), verb, unit.name), (answer) =>
        "state" in answer && answer.state !== undefined && answer.change !== undefined
          ? Effect.succeed({ change: answer.change, unit: answer.unit ?? unit.unit, state: answer.state })
          : new HostUnreachable({ target: target.name, detail: `${target.name} answered no unit state` })
      )

    return {
      inspect: (target, unit) =>
        target.channel === "local"
          ? local.inspect(unit)
          : Effect.flatMap(ask(target, unitHereArgs("show", unit.name, target.name), "show", unit.name), (answer) =>
              "state" in answer && answer.state !== undefined
                ? Effect.succeed(answer.state)
                : new HostUnreachable({ target: target.name, detail: `${target.name} answered no unit state` })
            ).pipe(
              Effect.catchTags({
                UnitCommandFailed: (e) => new HostUnreachable({ target: target.name, detail: e.detail }),
                UnitPreflightRejected: (e) => new HostUnreachable({ target: target.name, detail: e.detail })
              })
            ),
      ensure: (target, definition) =>
        target.channel === "local" ? local.ensure(definition) : remoteChange(target, "ensure", definition),
      kick: (target, definition) =>
        target.channel === "local" ? local.kick(definition) : remoteChange(target, "kick", definition),
      reassertTimer: (target, unit) =>
        target.channel === "local" ? local.reassertTimer(unit) : remoteChange(target, "reassert", unit),
      probe: (from, url) =>
        from.channel === "local"
          ? probeUrl(url)
          : Effect.flatMap(
              ask(from, probeHereArgs(url), "verify", url).pipe(
                Effect.catchTags({
                  UnitCommandFailed: (e) => new HostUnreachable({ target: from.name, detail: e.detail }),
                  UnitPreflightRejected: (e) => new HostUnreachable({ target: from.name, detail: e.detail })
                })
              ),
              (answer) =>
                "probe" in answer && answer.probe !== undefined
                  ? Effect.succeed(answer.probe)
                  : new HostUnreachable({ target: from.name, detail: `${from.name} answered no probe` })
            )
    }
  })
)

/**
 * Every target's units in memory (one memory service manager per target, created on first use), hosts
 * whose channel does not answer, and endpoint answers per `from → url`: the reconciler's tests.
 */
export const makeMemoryHostUnits = () => {
  const hosts = new Map<string, ReturnType<typeof makeMemoryServiceManager>>()
  const silent = new Set<string>()
  const endpoints = new Map<string, EndpointProbe | "channel_fails">()
  /** Every host-changing command, prefixed by its target: "forge-1: restart keel-api.service". */
  const commands: Array<string> = []
  const host = (name: string) => {
    let found = hosts.get(name)
    if (found === undefined) {
      found = makeMemoryServiceManager()
      hosts.set(name, found)
    }
    return found
  }
  const reach = <A, E>(
    target: Target,
    run: (memory: ReturnType<typeof makeMemoryServiceManager>) => Effect.Effect<A, E>
  ) =>
    silent.has(target.name)
      ? Effect.fail(new HostUnreachable({ target: target.name, detail: `${target.name} does not answer` }))
      : Effect.suspend(() => {
          const memory = host(target.name)
          const before = memory.commands.length
          return run(memory).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                for (const command of memory.commands.slice(before)) commands.push(`${target.name}: ${command}`)
              })
            )
          )
        })
  const units: HostUnits["Type"] = {
    inspect: (target, unit) => reach(target, (m) => m.manager.inspect(unit)),
    ensure: (target, definition) => reach(target, (m) => m.manager.ensure(definition)),
    kick: (target, definition) => reach(target, (m) => m.manager.kick(definition)),
    reassertTimer: (target, unit) => reach(target, (m) => m.manager.reassertTimer(unit)),
    probe: (from, url) => {
      const answer = endpoints.get(`${from.name} ${url}`) ?? endpoints.get(`* ${url}`) ?? "unreachable"
      return silent.has(from.name) || answer === "channel_fails"
        ? Effect.fail(new HostUnreachable({ target: from.name, detail: `${from.name} does not answer` }))
        : Effect.succeed(answer)
    }
  }
  return {
    units,
    host,
    commands: commands as ReadonlyArray<string>,
    /** The host's channel stops (or starts again) answering. */
    setSilent: (target: string, isSilent: boolean) => void (isSilent ? silent.add(target) : silent.delete(target)),
    /** What a probe of `url` from `from` (`*`: any consumer) finds. */
    setEndpoint: (from: string, url: string, answer: EndpointProbe | "channel_fails") =>
      void endpoints.set(`${from} ${url}`, answer)
  }
}

export type MemoryHostUnits = ReturnType<typeof makeMemoryHostUnits>

export const MemoryHostUnits = (memory: MemoryHostUnits = makeMemoryHostUnits()) =>
  Layer.succeed(HostUnits, memory.units)
