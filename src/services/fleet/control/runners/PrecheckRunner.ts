import { Effect, Option, Schema } from "effect"
import * as Yaml from "yaml"
import type { RunnerUnitAnswer } from "../../../../contracts/fleet/HostAgent.js"
import { Vault } from "../../../platform/vault/Vault.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import { RepositoryName, type Target } from "../../shared/registry/Schema.js"
import { expectedLabels, organizationOf, type RunnerLayout, runnerLayout } from "../../shared/runners/RunnerLayout.js"
import { renderWorkflowGuard } from "../../shared/runners/RunnerRender.js"
import { RegistryWriter } from "../registry/RegistryWriter.js"
import { renderNftTable } from "./RunnerFirewall.js"
import { RunnerHost } from "./RunnerHost.js"
import { type ProviderScope, RunnerProvider } from "./RunnerProvider.js"
import {
  gatewayScript,
  installScript,
  prepareScript,
  removeScript,
  type ScriptStep,
  statusScript
} from "./RunnerScripts.js"
import { firewallProblems, layoutDeviations, parseStats } from "./RunnerStatus.js"

/** The lifecycle was refused before it changed anything (docs/runners.md lists the reasons). */
export class RunnerRefused extends Schema.TaggedError<RunnerRefused>()("RunnerRefused", {
  code: Schema.Literal("RUNNER_REFUSED"),
  target: Schema.String,
  detail: Schema.String
}) {}

export type RunnerStep = ScriptStep

/** What install or remove did, step by step; a failed install says what its rollback did and what remains. */
export interface LifecycleReport {
  readonly target: string
  readonly runner: string
  readonly action: "install" | "remove"
  readonly ok: boolean
  readonly steps: ReadonlyArray<RunnerStep>
  readonly rollback: ReadonlyArray<RunnerStep> | null
  readonly remains: ReadonlyArray<string>
}

export interface StatusReport {
  readonly target: string
  readonly runner: string
  readonly ok: boolean
  readonly account: { readonly name: string; readonly uid: number; readonly gid: number } | null
  readonly service: unknown
  readonly provider: {
    readonly id: number
    readonly status: string
    readonly busy: boolean
    readonly labels: ReadonlyArray<string>
  } | null
  readonly labels: { readonly expected: ReadonlyArray<string>; readonly ok: boolean }
  readonly firewall: { readonly table: string | null; readonly reasserted: boolean }
  readonly gateway_url: string | null
  readonly agent_id: string | null
  readonly deviations: ReadonlyArray<string>
}

const failed = (steps: ReadonlyArray<RunnerStep>) => steps.some((s) => s.result === "failed")
const first = (values: ReadonlyMap<string, ReadonlyArray<string>>, name: string) => values.get(name)?.[0]

/** How long the gateway's grant lives: a year; every install issues a new one and revokes the old. */
const GATEWAY_GRANT_TTL_MS = 365 * 24 * 3_600_000

/** How many times repository-add re-reads and retries when another writer changed the registry meanwhile. */
const WRITE_ATTEMPTS = 3

/**
 * `ctl host precheck-runner install | status | remove <target>` and `repository-add <repository>` (seed 002, pre-check
 * runner rules 1–6; docs/runners.md). The provider credential and the signing secret are read from the vault here,
 * on the control plane; only the short-lived registration or removal token and the signing secret travel, on the
 * host channel's stdin.
 */
export class PrecheckRunner extends Effect.Service<PrecheckRunner>()("fleet/PrecheckRunner", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const writer = yield* RegistryWriter
    const vault = yield* Vault
    const provider = yield* RunnerProvider
    const host = yield* RunnerHost

    const refused = (target: string, detail: string) => new RunnerRefused({ code: "RUNNER_REFUSED", target, detail })

    const resolve = (name: string) =>
      Effect.gen(function* () {
        const snapshot = yield* registry
          .read({ allowCached: true })
          .pipe(Effect.mapError((e) => refused(name, `the registry: ${e.detail}`)))
        const target = snapshot.registry.targets.find((t) => t.name === name)
        if (target === undefined) return yield* refused(name, `${name} is not a target of the registry`)
        const runner = target.precheck_runner
        if (runner === undefined) return yield* refused(name, `${name} declares no precheck_runner (docs/registry.md)`)
        if (target.os === "darwin")
          return yield* refused(
            name,
            "the macOS lifecycle is not built: its LaunchDaemon and PF anchor are rendered, its account and service steps are not (docs/runners.md)"
          )
        return {
          target,
          runner,
          layout: runnerLayout(target, runner),
          settings: snapshot.registry.settings,
          registryActions: snapshot.registry.actions
        }
      })

    /** A vault `item#field` value, read in this process: it never leaves it except on a host channel's stdin. */
    const secret = (target: string, reference: string) =>
      Effect.gen(function* () {
        const [item, field] = reference.split("#") as [string, string]
        const fields = yield* vault
          .getItem(item)
          .pipe(Effect.mapError((e) => refused(target, `the vault item ${item}: ${e.detail}`)))
        const value = fields[field]
        if (value === undefined || value === "")
          return yield* refused(target, `the vault item ${item} has no field ${field}`)
        return value
      })

    const scopeOf = (target: string, runner: NonNullable<Target["precheck_runner"]>) =>
      Effect.map(
        secret(target, runner.credential),
        (credential): ProviderScope => ({ apiUrl: runner.api_url, org: organizationOf(runner), credential })
      )

    const providerFailure = (target: string) => (error: { readonly detail: string }) =>
      refused(target, `the provider: ${error.detail}`)

    /** The gateway's grants: one consumer per target; every grant of it but `keep` is revoked. */
    const revokeGatewayGrants = (consumer: string, keep?: string) =>
      Effect.gen(function* () {
        const grants = yield* vault.listGrants
        const old = grants.filter((g) => g.consumer === consumer && g.id !== keep)
        yield* Effect.forEach(old, (g) => vault.revokeGrant(g.id), { discard: true })
        return old.length
      })

    /**
     * The gateway's own credential: a `job-submit` grant for the targets its jobs may reach, written root-only on
     * the host with the gateway's routing; older grants of the gateway are revoked once the new one is in place.
     */
    const provisionGateway = (
      target: Target,
      layout: RunnerLayout,
      runner: NonNullable<Target["precheck_runner"]>,
      actions: { readonly "job-submit"?: ReadonlyArray<string> | undefined }
    ) =>
      Effect.gen(function* () {
        const gateway = layout.gateway!
        if (!(actions["job-submit"] ?? []).includes(gateway.consumer))
          return [
            {
              step: "gateway-grant",
              result: "failed",
              detail: `actions.job-submit does not list ${gateway.consumer}: the control plane would refuse the gateway`
            }
          ]
        const hosts = [...new Set(runner.gateway_jobs.map((j) => j.target))]
        const issued = yield* vault
          .createGrant({
            consumer: gateway.consumer,
            actions: ["job-submit"],
            items: [],
            // Never an empty list (any host): with no jobs declared the grant names the runner's own host only.
            hosts: hosts.length > 0 ? hosts : [target.name],
            ttlMillis: GATEWAY_GRANT_TTL_MS
          })
          .pipe(Effect.either)
        if (issued._tag === "Left") return [{ step: "gateway-grant", result: "failed", detail: issued.left.detail }]
        const written = yield* host
          .script(target, gatewayScript(layout), {
            signingSecret: JSON.stringify(issued.right.credential)
          })
          .pipe(Effect.either)
        if (written._tag === "Left") {
          yield* vault.revokeGrant(issued.right.grant.id)
          return [{ step: "gateway-grant", result: "failed", detail: written.left.detail }]
        }
        const revoked = failed(written.right.steps)
          ? 0
          : yield* revokeGatewayGrants(gateway.consumer, issued.right.grant.id)
        return written.right.steps.map((s) =>
          s.step === "gateway-grant" && s.result === "ok"
            ? {
                ...s,
                detail: `grant ${issued.right.grant.id} (${gateway.consumer}: job-submit on ${(hosts.length > 0 ? hosts : [target.name]).join(", ")}) at ${s.detail}; ${revoked} older grant(s) revoked`
              }
            : s
        )
      })

    /** Removes everything of the runner from its host and the provider; the steps say what each found. */
    const teardown = (target: Target, layout: RunnerLayout, scope: ProviderScope, keepAccount: boolean) =>
      Effect.gen(function* () {
        const steps: Array<RunnerStep> = []
        const token = yield* provider.removalToken(scope).pipe(Effect.either)
        steps.push(
          token._tag === "Right"
            ? { step: "removal-token", result: "ok", detail: `expires ${token.right.expires_at}` }
            : { step: "removal-token", result: "failed", detail: token.left.detail }
        )
        const unit = yield* host.unit(target, "remove").pipe(Effect.either)
        steps.push(
          ...(unit._tag === "Left"
            ? [{ step: "service", result: "failed", detail: unit.left.detail }]
            : serviceSteps(unit.right.answer, "removed"))
        )
        const script = yield* host
          .script(target, removeScript(layout, { keepAccount }), {
            token: token._tag === "Right" ? token.right.token : ""
          })
          .pipe(Effect.either)
        if (script._tag === "Left") steps.push({ step: "host", result: "failed", detail: script.left.detail })
        else steps.push(...script.right.steps)
        if (layout.gateway !== null) {
          const revoked = yield* revokeGatewayGrants(layout.gateway.consumer)
          steps.push({
            step: "gateway-grant",
            result: revoked > 0 ? "revoked" : "absent",
            detail: `${revoked} grant(s) of ${layout.gateway.consumer}`
          })
        }
        const unregistered = steps.some((s) => s.step === "unregister" && s.result === "removed")
        const known = yield* provider.findRunner(scope, layout.name).pipe(Effect.either)
        if (known._tag === "Left") steps.push({ step: "provider", result: "failed", detail: known.left.detail })
        else if (Option.isNone(known.right))
          steps.push({
            step: "provider",
            result: unregistered ? "ok" : "absent",
            detail: unregistered ? "the provider no longer lists the runner" : "the provider no longer knows the runner"
          })
        else {
          const id = known.right.value.id
          const deleted = yield* provider.deleteRunner(scope, id).pipe(Effect.either)
          steps.push(
            deleted._tag === "Left"
              ? { step: "provider", result: "failed", detail: deleted.left.detail }
              : {
                  step: "provider",
                  result: "removed",
                  detail: `deleted by id ${id}: the host could not unregister it (${deleted.right})`
                }
          )
        }
        const verify = steps.find((s) => s.step === "verify")
        const remains = [
          ...(verify?.result === "failed" ? [verify.detail] : []),
          ...steps.filter((s) => s.result === "failed" && s.step !== "verify").map((s) => `${s.step}: ${s.detail}`)
        ]
        // The host could not unregister, but the provider does not list the runner (any more): nothing is left.
        const providerClean = steps.some((s) => s.step === "provider" && s.result !== "failed")
        return {
          steps,
          providerClean,
          remains: remains.filter((r) => !(providerClean && r.startsWith("unregister:")))
        }
      })

    type Resolved = Effect.Effect.Success<ReturnType<typeof resolve>>
    type Scope = Effect.Effect.Success<ReturnType<typeof scopeOf>>

    /**
     * The provider side: the runner's repositories (a public one only once admitted), its group with exactly them,
     * and a registration token. Each step recorded in `steps`.
     */
    const granted = (name: string, resolved: Resolved, scope: Scope, steps: Array<RunnerStep>) =>
      Effect.gen(function* () {
        const { runner, settings } = resolved
        const repositories = yield* Effect.forEach(runner.repositories, (repo) =>
          provider.repository(scope, repo)
        ).pipe(Effect.mapError(providerFailure(name)))
        const admitted = new Set(settings.precheck_runner.public_repositories.map((r) => r.toLowerCase()))
        const publicOnes = repositories.filter((r) => !r.private)
        const notAdmitted = publicOnes.filter((r) => !admitted.has(r.full_name.toLowerCase()))
        if (notAdmitted.length > 0)
          return yield* refused(
            name,
            `public repositories are refused until admitted: ${notAdmitted.map((r) => r.full_name).join(", ")} (ctl host precheck-runner repository-add)`
          )
        steps.push({
          step: "repositories",
          result: "ok",
          detail: `${repositories.length} granted (${publicOnes.length} admitted public)`
        })
        const group = yield* provider
          .ensureGroup(scope, {
            name: runner.runner_group,
            repositoryIds: repositories.map((r) => r.id),
            allowsPublicRepositories: publicOnes.length > 0
          })
          .pipe(Effect.mapError(providerFailure(name)))
        steps.push({
          step: "runner-group",
          result: group.created ? "created" : "updated",
          detail: `${group.name} (id ${group.id}): visibility selected, ${group.repositories.length} repositories, public ${group.allows_public_repositories}, workflow restrictions off`
        })
        const token = yield* provider.registrationToken(scope).pipe(Effect.mapError(providerFailure(name)))
        steps.push({ step: "registration-token", result: "ok", detail: `expires ${token.expires_at}` })
        return token
      })

    /** Phase two on the host: the install script with the token and secret, then its firewall read back. */
    const installedOnHost = (
      resolved: Resolved,
      ids: { readonly uid: number; readonly gid: number; readonly archiveFile: string },
      secrets: { readonly token: string; readonly signingSecret: string },
      steps: Array<RunnerStep>
    ) =>
      Effect.gen(function* () {
        const { layout, runner, target } = resolved
        const installed = yield* host
          .script(
            target,
            installScript(layout, runner, ids, renderNftTable({ uid: ids.uid, gatewayPort: runner.gateway_port })),
            secrets
          )
          .pipe(Effect.either)
        if (installed._tag === "Left") {
          steps.push({ step: "host", result: "failed", detail: installed.left.detail })
          return false
        }
        steps.push(...installed.right.steps)
        if (failed(installed.right.steps) || installed.right.exitCode !== 0) return false
        const readback = firewallProblems(first(installed.right.values, "firewall") ?? "", ids.uid, runner.gateway_port)
        steps.push(
          readback.length === 0
            ? { step: "firewall-readback", result: "ok", detail: `nft -j list: every rule keyed to uid ${ids.uid}` }
            : { step: "firewall-readback", result: "failed", detail: readback.join("; ") }
        )
        return readback.length === 0
      })

    /** The installed runner as the provider and the host report it: its labels and its documented layout. */
    const checkedInstall = (resolved: Resolved, scope: Scope, steps: Array<RunnerStep>) =>
      Effect.gen(function* () {
        const status = yield* inspect(resolved.target, resolved.layout, resolved.runner, scope)
        steps.push(
          status.labels.ok
            ? { step: "labels", result: "ok", detail: status.provider?.labels.join(", ") ?? "" }
            : {
                step: "labels",
                result: "failed",
                detail: `the provider reports ${status.provider === null ? "no runner" : `[${status.provider.labels.join(", ")}]`}, expected [${status.labels.expected.join(", ")}]`
              }
        )
        const layoutProblems = status.deviations.filter((d) => !/^(labels|provider):/.test(d))
        steps.push(
          layoutProblems.length === 0
            ? { step: "layout", result: "ok", detail: "ownership and modes as documented" }
            : { step: "layout", result: "failed", detail: layoutProblems.join("; ") }
        )
      })

    const install = (name: string) =>
      Effect.gen(function* () {
        const resolved = yield* resolve(name)
        const { layout, registryActions, runner, target } = resolved
        const scope = yield* scopeOf(name, runner)
        const signingSecret = yield* secret(name, runner.signing_secret)
        const steps: Array<RunnerStep> = []
        const report = (
          ok: boolean,
          rollback: ReadonlyArray<RunnerStep> | null,
          remains: ReadonlyArray<string>
        ): LifecycleReport => ({ target: name, runner: layout.name, action: "install", ok, steps, rollback, remains })
        const token = yield* granted(name, resolved, scope, steps)

        // Phase one creates nothing unless it succeeds: a refused archive leaves the host as it was.
        const prepared = yield* host.script(target, prepareScript(layout, runner))
        steps.push(...prepared.steps)
        if (failed(prepared.steps) || prepared.exitCode !== 0) return report(false, null, [])
        const keepAccount = prepared.steps.some((s) => s.step === "account" && s.result === "present")
        const uid = Number(first(prepared.values, "uid"))
        const gid = Number(first(prepared.values, "gid"))
        const archiveFile = first(prepared.values, "archive_file") ?? ""

        // A runner installed before this attempt is not torn down by its failure: it is reported, kept as it is.
        const reinstall = first(prepared.values, "installed") === "yes"
        const rollBack = reinstall
          ? Effect.succeed(
              report(false, null, [
                "the runner was installed before this attempt: nothing was rolled back (install again, or remove)"
              ])
            )
          : Effect.gen(function* () {
              const undone = yield* teardown(target, layout, scope, keepAccount)
              return report(false, undone.steps, undone.remains)
            })

        const onHost = yield* installedOnHost(
          resolved,
          { uid, gid, archiveFile },
          { token: token.token, signingSecret },
          steps
        )
        if (!onHost) return yield* rollBack
        if (layout.gateway !== null) {
          steps.push(...(yield* provisionGateway(target, layout, runner, registryActions)))
          if (failed(steps)) return yield* rollBack
        }
        const unit = yield* host.unit(target, "ensure").pipe(Effect.either)
        steps.push(
          ...(unit._tag === "Left"
            ? [{ step: "service", result: "failed", detail: unit.left.detail }]
            : serviceSteps(unit.right.answer, "started"))
        )
        if (failed(steps)) return yield* rollBack
        yield* checkedInstall(resolved, scope, steps)
        if (failed(steps)) return yield* rollBack
        return report(true, null, [])
      })

    /** The runner as its host and the provider report it, with every deviation from the documented layout. */
    const inspect = (
      target: Target,
      layout: RunnerLayout,
      runner: NonNullable<Target["precheck_runner"]>,
      scope: ProviderScope
    ) =>
      Effect.gen(function* () {
        const read = yield* host.script(target, statusScript(layout))
        const uid = first(read.values, "uid")
        const account =
          uid === undefined || uid === "-"
            ? null
            : { name: layout.account, uid: Number(uid), gid: Number(first(read.values, "gid")) }
        const deviations: Array<string> = [
          ...layoutDeviations(
            layout,
            account,
            parseStats(read.values.get("stat") ?? []),
            read.values.get("writable") ?? []
          )
        ]
        const table = first(read.values, "firewall")
        if (account !== null)
          deviations.push(
            ...firewallProblems(table === "-" ? "" : (table ?? ""), account.uid, runner.gateway_port).map(
              (p) => `firewall: ${p}`
            )
          )
        const gatewayUrl = first(read.values, "gateway_url") ?? null
        const agentId = first(read.values, "agent_id") ?? null
        if (gatewayUrl !== layout.gatewayUrl)
          deviations.push(`gateway.url says ${gatewayUrl}, not ${layout.gatewayUrl}`)
        if (agentId !== layout.agentId) deviations.push(`agent.id says ${agentId}, not ${layout.agentId}`)
        const unit = yield* host.unit(target, "show").pipe(Effect.either)
        const service = unit._tag === "Left" ? { error: unit.left.detail } : unit.right.answer
        const units = "units" in service ? service.units : undefined
        if (units === undefined) deviations.push(`service: ${unit._tag === "Left" ? unit.left.detail : "unreadable"}`)
        for (const u of units ?? [])
          if (u.state?.active_state !== "active")
            deviations.push(`service: ${u.name} is ${u.state?.active_state ?? "unreadable"}, not active`)
        const found = yield* provider.findRunner(scope, layout.name).pipe(Effect.either)
        const listed = found._tag === "Right" ? Option.getOrNull(found.right) : null
        if (found._tag === "Left") deviations.push(`provider: ${found.left.detail}`)
        else if (listed === null) deviations.push("provider: the runner is not registered")
        const expected = expectedLabels(target, runner)
        const labelsOk =
          listed !== null &&
          expected.every((label) => listed.labels.includes(label)) &&
          listed.labels.length === expected.length
        if (listed !== null && !labelsOk)
          deviations.push(`labels: [${listed.labels.join(", ")}], expected [${expected.join(", ")}]`)
        return {
          target: target.name,
          runner: layout.name,
          ok: deviations.length === 0,
          account,
          service,
          provider:
            listed === null ? null : { id: listed.id, status: listed.status, busy: listed.busy, labels: listed.labels },
          labels: { expected, ok: labelsOk },
          firewall: {
            table: table === undefined || table === "-" ? null : `inet keel_runner_${account?.uid}`,
            reasserted: first(read.values, "firewall_reasserted") === "yes"
          },
          gateway_url: gatewayUrl,
          agent_id: agentId,
          deviations
        } satisfies StatusReport
      })

    const status = (name: string) =>
      Effect.gen(function* () {
        const { layout, runner, target } = yield* resolve(name)
        return yield* inspect(target, layout, runner, yield* scopeOf(name, runner))
      })

    const remove = (name: string) =>
      Effect.gen(function* () {
        const { layout, runner, target } = yield* resolve(name)
        const undone = yield* teardown(target, layout, yield* scopeOf(name, runner), false)
        const report: LifecycleReport = {
          target: name,
          runner: layout.name,
          action: "remove",
          ok: undone.steps.every((s) => s.result !== "failed" || (s.step === "unregister" && undone.providerClean)),
          steps: undone.steps,
          rollback: null,
          remains: undone.remains
        }
        return report
      })

    /**
     * Admits a public repository (rule 4): `settings.precheck_runner.public_repositories` through the registry's
     * compare-and-set update. The runner group grants it at the next install of a runner that lists it.
     */
    const repositoryAdd = (repository: string) =>
      Effect.gen(function* () {
        if (!Schema.is(RepositoryName)(repository))
          return yield* refused("(fleet)", `${repository} is not a repository owner/name`)
        for (let attempt = 1; ; attempt++) {
          const snapshot = yield* registry
            .read()
            .pipe(Effect.mapError((e) => refused("(fleet)", `the registry: ${e.detail}`)))
          const listed = snapshot.registry.settings.precheck_runner.public_repositories
          const runners = snapshot.registry.targets.filter((t) =>
            t.precheck_runner?.repositories.some((r) => r.toLowerCase() === repository.toLowerCase())
          )
          const guard = renderWorkflowGuard(
            runners[0] === undefined ? ["self-hosted"] : expectedLabels(runners[0], runners[0].precheck_runner!)
          )
          const answer = { repository, targets: runners.map((t) => t.name), guard }
          if (listed.some((r) => r.toLowerCase() === repository.toLowerCase()))
            return { ...answer, change: "unchanged" as const }
          const change = (text: string) => {
            const document = Yaml.parseDocument(text)
            document.setIn(["settings", "precheck_runner", "public_repositories"], [...listed, repository])
            return document.toString()
          }
          const written = yield* writer
            .update(snapshot.digest, change, `precheck-runner repository-add ${repository}`)
            .pipe(Effect.either)
          if (written._tag === "Right") return { ...answer, change: "added" as const, ...written.right }
          if (written.left._tag !== "RegistryConflict" || attempt >= WRITE_ATTEMPTS)
            return yield* refused("(fleet)", `the registry was not written: ${written.left.detail}`)
        }
      })

    return { install, status, remove, repositoryAdd } as const
  })
}) {}

/** A `unit … --here` answer as steps: `service` for the runner's unit, `gateway-service` for the gateway's. */
const serviceSteps = (answer: RunnerUnitAnswer, done: string): ReadonlyArray<RunnerStep> => {
  if (!("ok" in answer) || !answer.ok)
    return [{ step: "service", result: "failed", detail: "error" in answer ? answer.error.detail : "no answer" }]
  return answer.units.map((unit) => ({
    step: unit.name.startsWith("precheck-gateway-") ? "gateway-service" : "service",
    result: unit.change ?? done,
    detail: `${unit.state.manager}: ${unit.state.active_state ?? "?"}${unit.state.main_pid ? `, pid ${unit.state.main_pid}` : ""}`
  }))
}
