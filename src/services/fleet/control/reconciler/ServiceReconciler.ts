import { randomBytes } from "node:crypto"
import { Clock, Effect, Option, Schema } from "effect"
import * as Yaml from "yaml"
import { TickInProgress } from "../../../../contracts/fleet/Reconciler.js"
import { thisHostName } from "../../../platform/AppConfig.js"
import { Leases } from "../../../platform/Leases.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { FleetRegistry, type FleetRegistrySnapshot } from "../../shared/registry/Registry.js"
import type { Target } from "../../shared/registry/Schema.js"
import { renderProblem, renderUnit } from "../../shared/units/UnitRender.js"
import { RegistryWriter } from "../registry/RegistryWriter.js"
import { Alerts, type ServiceAlert } from "./Alerts.js"
import { AutonomyControl, type BreakerPolicy } from "./AutonomyControl.js"
import { beaconEnsureRefusal, decideUnit, mutatesHost, type UnitDecision } from "./Decision.js"
import { type Assessed, FleetEvidence } from "./FleetEvidence.js"
import { HostUnits } from "./HostUnits.js"
import {
  LATEST_REPORT_KEY,
  runReportKey,
  type ServiceExecution,
  type ServiceReport,
  type ServiceRow
} from "./ServiceReport.js"

type Mode = ServiceReport["mode"]

/** Which decisions each mode executes: EnforceSafe repairs units that exist; EnforceOwned also creates and adopts. */
export const allowedIn = (mode: Mode, decision: UnitDecision) => {
  if (mode === "report") return false
  if (decision.action === "kick" || decision.action === "reassert_beacon") return true
  if (decision.action === "ensure") return decision.state === "failed" || mode === "enforce-owned"
  if (decision.action === "adopt") return mode === "enforce-owned"
  return false
}

const refusalOf = (decision: UnitDecision): ServiceRow["refusal"] =>
  decision.state === "identity_unresolved" ||
  decision.state === "declaration_incomplete" ||
  decision.state === "endpoint_unverified"
    ? decision.state
    : null

const TICK_LEASE = "autonomy:tick"
export const serviceLeaseKey = (target: string, name: string) => `service:${target}/${name}`

const executionOf = (fields: Partial<ServiceExecution> & Pick<ServiceExecution, "status">): ServiceExecution => ({
  skipped_because: null,
  change: null,
  error: null,
  feeds_breaker: false,
  ...fields
})

/** The run id: the start time, sortable and safe in an object key. */
const runIdAt = (ms: number) => `${new Date(ms).toISOString().replace(/:/g, "-")}-${randomBytes(3).toString("hex")}`

/** The previous report's state per service, for alert transitions. */
const PreviousReport = Schema.Struct({
  services: Schema.Array(
    Schema.Struct({ target: Schema.String, name: Schema.String, decision: Schema.Struct({ state: Schema.String }) })
  )
})

export class UnknownService extends Schema.TaggedError<UnknownService>()("UnknownService", {
  detail: Schema.String
}) {}

/** An operator's repair that cannot apply to this declaration: refused before the host is touched (never a breaker failure). */
export class ServiceOperationRefused extends Schema.TaggedError<ServiceOperationRefused>()("ServiceOperationRefused", {
  code: Schema.Literal("DECLARATION_INCOMPLETE", "REASSERT_REFUSED", "ENSURE_REFUSED"),
  detail: Schema.String
}) {}

/**
 * The service reconciler (seed 002, "Unit state and service reconciliation"): joins each declared unit's row in
 * its host's newest beacon with a fresh endpoint sweep and host probes, decides (`decideUnit`), executes what
 * the autonomy mode allows within its bounds (max_actions_per_tick, the emergency pause, the per-target
 * breaker, the per-service lease), raises alerts on transitions, and writes the report objects.
 */
export class ServiceReconciler extends Effect.Service<ServiceReconciler>()("fleet/ServiceReconciler", {
  dependencies: [FleetEvidence.Default],
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const writer = yield* RegistryWriter
    const objects = yield* ObjectGateway
    const units = yield* HostUnits
    const evidence = yield* FleetEvidence
    const control = yield* AutonomyControl
    const leases = yield* Leases
    const alerts = yield* Alerts
    const self = yield* thisHostName
    const holder = `${self}:${process.pid}:${randomBytes(4).toString("hex")}`

    const policyOf = (snapshot: FleetRegistrySnapshot): BreakerPolicy => ({
      failures: snapshot.registry.settings.breaker_failures,
      cooldownSeconds: snapshot.registry.settings.breaker_cooldown_seconds
    })

    /** Writes the host's corrected unit path into the registry (compare-and-set on the digest read). */
    const adopt = (snapshot: FleetRegistrySnapshot, target: Target, name: string, unit: string) =>
      writer
        .update(
          snapshot.digest,
          (text) => {
            const document = Yaml.parseDocument(text)
            const targets = document.get("targets") as Yaml.YAMLSeq
            const at = targets.items.findIndex((t) => (t as Yaml.YAMLMap).get("name") === target.name)
            const services = (targets.items[at] as Yaml.YAMLMap).get("services") as Yaml.YAMLSeq
            const index = services.items.findIndex((s) => (s as Yaml.YAMLMap).get("name") === name)
            document.setIn(["targets", at, "services", index, "unit"], unit)
            return document.toString()
          },
          `reconciler adopted ${target.name}/${name} at ${unit}`
        )
        .pipe(Effect.map(() => "adopted"))

    /** Carries out one decision on its host (or the registry): the change made, or why it failed. */
    const carryOut = (snapshot: FleetRegistrySnapshot, item: Assessed) =>
      Effect.gen(function* () {
        const { target, declaration, decision } = item
        const declared = { name: declaration.name, unit: declaration.unit, program: declaration.program }
        switch (decision.action) {
          case "ensure":
            return (yield* units.ensure(target, renderUnit(declaration, target.os))).change as string
          case "kick":
            return (yield* units.kick(target, renderUnit(declaration, target.os))).change as string
          case "reassert_beacon":
            return (yield* units.reassertTimer(target, declared)).change as string
          case "adopt":
            return yield* adopt(snapshot, target, declaration.name, decision.unit)
          default:
            return "none"
        }
      })

    /** Runs one action under its service lease; the execution record, and the breaker fed where the host failed. */
    const execute = (snapshot: FleetRegistrySnapshot, item: Assessed) =>
      Effect.gen(function* () {
        const key = serviceLeaseKey(item.target.name, item.declaration.name)
        const lease = yield* leases.acquire(key, holder, "10 minutes").pipe(Effect.either)
        if (lease._tag === "Left") return executionOf({ status: "skipped", skipped_because: "lease_held" })
        // The beacon may predate another run's repair: under the lease, the unit is read on the host again and a
        // decision the host no longer supports is not carried out (level-triggered, never acting twice).
        if (item.evidence.row !== null && (item.decision.action === "ensure" || item.decision.action === "kick")) {
          const declared = {
            name: item.declaration.name,
            unit: item.declaration.unit,
            program: item.declaration.program
          }
          const now = yield* units.inspect(item.target, declared).pipe(Effect.option)
          if (Option.isSome(now) && now.value.error === null) {
            const again = decideUnit({ declaration: item.declaration, beacon: "fresh", row: now.value })
            if (again.action !== item.decision.action) {
              yield* leases.release(key, holder).pipe(Effect.ignore)
              return executionOf({ status: "skipped", skipped_because: "resolved_on_host" })
            }
          }
        }
        const outcome = yield* carryOut(snapshot, item).pipe(
          Effect.either,
          Effect.ensuring(leases.release(key, holder).pipe(Effect.ignore))
        )
        if (outcome._tag === "Right") {
          if (mutatesHost(item.decision)) yield* control.recordSuccess(item.target.name)
          return executionOf({ status: "succeeded", change: outcome.right })
        }
        const error = outcome.left
        // Only a command that failed on the host feeds the breaker (rule 4); a rejected preflight, an
        // unreachable channel or a registry conflict changed nothing there.
        const onHost = error._tag === "UnitCommandFailed"
        if (onHost) yield* control.recordFailure(item.target.name, error.detail, policyOf(snapshot))
        const detail = "detail" in error ? String(error.detail) : String(error)
        return executionOf({ status: "failed", error: `${error._tag}: ${detail}`, feeds_breaker: onHost })
      })

    /** The alerts this run raises, from the previous report's states (transitions) and this run's. */
    const alertsFor = (runId: string, rows: ReadonlyArray<ServiceRow>, at: string) =>
      Effect.gen(function* () {
        const previous = yield* objects.getJson(LATEST_REPORT_KEY).pipe(
          Effect.map(Option.flatMap(Schema.decodeUnknownOption(PreviousReport))),
          Effect.orElseSucceed(() => Option.none())
        )
        const before = new Map(
          Option.match(previous, {
            onNone: () => [],
            onSome: (p) => p.services.map((s) => [`${s.target}/${s.name}`, s.decision.state] as const)
          })
        )
        return rows.flatMap((row): ReadonlyArray<ServiceAlert> => {
          const state = row.decision.state
          const alert = (delivery: ServiceAlert["delivery"]): ServiceAlert => ({
            kind: state as ServiceAlert["kind"],
            target: row.target,
            service: row.name,
            delivery,
            reason: row.decision.reason,
            run_id: runId,
            raised_at: at
          })
          if (state === "declaration_incomplete") return [alert("repeated")]
          if (
            (state === "identity_unresolved" || state === "endpoint_unverified") &&
            before.get(`${row.target}/${row.name}`) !== state
          )
            return [alert("once")]
          return []
        })
      })

    const rowOf = (item: Assessed, execution: ServiceExecution): ServiceRow => ({
      target: item.target.name,
      name: item.declaration.name,
      unit: item.declaration.unit,
      kind: item.declaration.kind,
      evidence: item.evidence,
      decision: item.decision,
      execution,
      refusal: refusalOf(item.decision)
    })

    const countStates = (rows: ReadonlyArray<ServiceRow>) => {
      const counts: Record<string, number> = {}
      for (const row of rows) counts[row.decision.state] = (counts[row.decision.state] ?? 0) + 1
      return counts
    }

    /** Writes the report objects: the run's immutable record, then latest (a tick's, not a converge's). */
    const publish = (report: ServiceReport) =>
      Effect.gen(function* () {
        const runKey = runReportKey(report.run_id)
        const tickReport = report.trigger !== "converge"
        // The stored report says where it is stored: a reader of latest.json (`ctl optimize status`) sees its keys.
        const stored = {
          ...report,
          report_keys: { latest: tickReport ? LATEST_REPORT_KEY : null, run: runKey },
          write_error: null
        }
        const written = yield* objects
          .putJson(runKey, stored)
          .pipe(Effect.zipRight(tickReport ? objects.putJson(LATEST_REPORT_KEY, stored) : Effect.void), Effect.either)
        return written._tag === "Right"
          ? stored
          : { ...report, report_keys: { latest: null, run: null }, write_error: written.left.detail }
      })

    /**
     * One reconciliation run: a tick (scheduled or manual) over the fleet, or a converge of one service.
     * A tick holds the fleet-wide `autonomy:tick` lease; every mutation holds its service's lease.
     */
    const run = (options: {
      readonly trigger: ServiceReport["trigger"]
      readonly only?: { readonly target: string; readonly name: string } | undefined
      /** Converge --apply: an operator's explicit request executes whatever the mode (still under its lease). */
      readonly apply?: boolean | undefined
    }) =>
      Effect.gen(function* () {
        const startedMs = yield* Clock.currentTimeMillis
        const runId = runIdAt(startedMs)
        const snapshot = yield* registry.read({ allowCached: true })
        const settings = snapshot.registry.settings
        if (options.only !== undefined) {
          const { target, name } = options.only
          const exists = snapshot.registry.targets.some(
            (t) => t.name === target && t.services.some((s) => s.name === name)
          )
          if (!exists) return yield* new UnknownService({ detail: `${target} declares no service named ${name}` })
        }
        const mode: Mode =
          options.trigger === "converge" && options.apply === true ? "enforce-owned" : settings.autonomy_mode
        const pause = yield* control.pause
        const policy = policyOf(snapshot)
        const assessed = yield* evidence.assessAll(snapshot, options.only)

        const context: RunContext = { trigger: options.trigger, apply: options.apply, mode, snapshot, pause, policy }
        let executed = 0
        const rows: Array<ServiceRow> = []
        for (const item of assessed) {
          const held = yield* standing(item, context, executed)
          const execution = held ?? (yield* execute(snapshot, item))
          if (held === undefined && execution.status !== "skipped") executed++
          rows.push(rowOf(item, execution))
        }
        return yield* publish(yield* reportOf(runId, startedMs, context, rows, executed))
      })

    /** What a run decides by: who asked, the mode, the registry read, the pause and the breaker policy. */
    interface RunContext {
      readonly trigger: ServiceReport["trigger"]
      readonly apply: boolean | undefined
      readonly mode: Mode
      readonly snapshot: Effect.Effect.Success<ReturnType<typeof registry.read>>
      readonly pause: Effect.Effect.Success<typeof control.pause>
      readonly policy: ReturnType<typeof policyOf>
    }

    /**
     * An item's execution when this run does not carry it out (refused, nothing to do, planned, or skipped and
     * why), or undefined: execute it. An operator's converge passes the tick's gates (mode report, pause, budget,
     * breaker), not the mode's allow-list or a historical registry.
     */
    const standing = (item: Assessed, context: RunContext, executed: number) =>
      Effect.gen(function* () {
        const { decision } = item
        if (decision.action === "refuse") return executionOf({ status: "refused" })
        if (!mutatesHost(decision) && decision.action !== "adopt") return executionOf({ status: "none" })
        const operator = context.trigger === "converge"
        const skipped = (because: ServiceExecution["skipped_because"]) =>
          executionOf({ status: "skipped", skipped_because: because })
        if (operator && context.apply !== true) return executionOf({ status: "planned" })
        if (!operator && context.mode === "report") return executionOf({ status: "planned" })
        if (!allowedIn(context.mode, decision)) return skipped("not_allowed_in_mode")
        if (context.snapshot.freshness !== "current") return skipped("registry_historical")
        if (!operator && context.pause.paused) return skipped("paused")
        if (!operator && executed >= context.snapshot.registry.settings.max_actions_per_tick)
          return skipped("budget_exhausted")
        if (
          !operator &&
          mutatesHost(decision) &&
          (yield* control.breaker(item.target.name, context.policy)).phase === "open"
        )
          return skipped("breaker_open")
        return undefined
      })

    /** The run's report, its alerts raised (a tick's; a converge raises none). */
    const reportOf = (
      runId: string,
      startedMs: number,
      context: RunContext,
      rows: ReadonlyArray<ServiceRow>,
      executed: number
    ) =>
      Effect.gen(function* () {
        const { snapshot } = context
        const finishedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
        // Alerts are the ticks' (their transitions are between ticks' reports); a converge raises none.
        const raised = context.trigger === "converge" ? [] : yield* alertsFor(runId, rows, finishedAt)
        const delivery = yield* alerts.raise(runId, raised)
        const report: ServiceReport = {
          schema: "keel.autonomy.services/v1",
          run_id: runId,
          trigger: context.trigger,
          started_at: new Date(startedMs).toISOString(),
          finished_at: finishedAt,
          mode: context.mode,
          registry: { digest: snapshot.digest, freshness: snapshot.freshness },
          pause: context.pause,
          max_actions_per_tick: snapshot.registry.settings.max_actions_per_tick,
          actions_executed: executed,
          breakers: yield* control.breakers(context.policy),
          counts: countStates(rows),
          services: [...rows],
          alerts: raised,
          alert_delivery: delivery,
          report_keys: { latest: null, run: null },
          write_error: null
        }
        return report
      })

    /** One tick over the fleet, unless another holds the fleet-wide tick lease. */
    const tick = (trigger: "scheduled" | "manual") =>
      Effect.gen(function* () {
        const lease = yield* leases.acquire(TICK_LEASE, holder, "15 minutes").pipe(Effect.either)
        if (lease._tag === "Left")
          return yield* new TickInProgress({
            code: "TICK_IN_PROGRESS",
            holder: lease.left._tag === "LeaseHeld" ? lease.left.holder : "",
            detail: lease.left.detail
          })
        return yield* run({ trigger }).pipe(Effect.ensuring(leases.release(TICK_LEASE, holder).pipe(Effect.ignore)))
      })

    /** `ctl service converge`: one service's decision, executed with --apply (under its lease). */
    const converge = (target: string, name: string, apply: boolean) =>
      run({ trigger: "converge", only: { target, name }, apply })

    /** The latest tick's report, if a tick wrote one. */
    const latest = objects.getJson(LATEST_REPORT_KEY).pipe(
      Effect.map((found) => Option.getOrNull(found) as ServiceReport | null),
      Effect.orElseSucceed(() => null)
    )

    /** A declared service by name: on `target`, or the one target that declares it. */
    const declared = (name: string, target?: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true })
        const matches = snapshot.registry.targets.flatMap((t) =>
          t.services
            .filter((s) => s.name === name && (target === undefined || t.name === target))
            .map((s) => ({ target: t, service: s }))
        )
        if (matches.length === 1) return matches[0]!
        if (target !== undefined && !snapshot.registry.targets.some((t) => t.name === target))
          return yield* new UnknownService({ detail: `${target} is not a target of the registry` })
        return yield* new UnknownService({
          detail:
            matches.length === 0
              ? target === undefined
                ? `no target declares a service named ${name}`
                : `${target} declares no service named ${name}`
              : `${name} is declared on ${matches.map((m) => m.target.name).join(", ")}: name one with --target`
        })
      })

    /**
     * `ctl service ensure|kick|reassert`: an operator's repair of one service on its host, under the service's
     * lease; a failure on the host feeds that host's breaker like the tick's.
     */
    const operate = (verb: "ensure" | "kick" | "reassert", name: string, target?: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry.read({ allowCached: true })
        const found = yield* declared(name, target)
        if (verb === "reassert" && found.service.kind !== "oneshot-timer") {
          return yield* new ServiceOperationRefused({
            code: "REASSERT_REFUSED",
            detail: `${name} is a ${found.service.kind}, not a oneshot-timer: reassert re-enables a timer; use ensure or kick`
          })
        }
        const beacon = verb === "ensure" ? beaconEnsureRefusal(found.service) : undefined
        if (beacon !== undefined) return yield* new ServiceOperationRefused({ code: "ENSURE_REFUSED", detail: beacon })
        const problem = verb === "reassert" ? undefined : renderProblem(found.service)
        if (problem !== undefined)
          return yield* new ServiceOperationRefused({ code: "DECLARATION_INCOMPLETE", detail: `${name}: ${problem}` })
        const key = serviceLeaseKey(found.target.name, name)
        yield* leases.acquire(key, holder, "10 minutes")
        const declaredUnit = { name, unit: found.service.unit, program: found.service.program }
        const outcome = yield* (
          verb === "reassert"
            ? units.reassertTimer(found.target, declaredUnit)
            : verb === "kick"
              ? units.kick(found.target, renderUnit(found.service, found.target.os))
              : units.ensure(found.target, renderUnit(found.service, found.target.os))
        ).pipe(
          Effect.tapError((error) =>
            error._tag === "UnitCommandFailed"
              ? control.recordFailure(found.target.name, error.detail, policyOf(snapshot))
              : Effect.void
          ),
          Effect.tap(() => control.recordSuccess(found.target.name)),
          Effect.ensuring(leases.release(key, holder).pipe(Effect.ignore))
        )
        return { target: found.target.name, name, ...outcome }
      })

    return { tick, converge, latest, declared, operate, policyOf, holder } as const
  })
}) {}
