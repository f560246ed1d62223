import { Clock, Effect, Layer, Option, ParseResult, Schema } from "effect"
import {
  type ProviderScope,
  RunnerProvider,
  type RunnerProviderError,
  RunnerProviderMismatch,
  RunnerProviderRefused,
  RunnerProviderUnavailable
} from "./RunnerProvider.js"

// GitHub's documented shapes, reduced to what Keel reads; Schema.Struct ignores every other field.
const Token = Schema.Struct({ token: Schema.String, expires_at: Schema.String })
const Repository = Schema.Struct({ id: Schema.Number, full_name: Schema.String, private: Schema.Boolean })
const Group = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  visibility: Schema.String,
  allows_public_repositories: Schema.Boolean,
  // Optional in GitHub's schema (older Enterprise Servers omit it): absent means no workflow restriction.
  restricted_to_workflows: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
const Groups = Schema.Struct({ runner_groups: Schema.Array(Group) })
const GroupRepositories = Schema.Struct({ repositories: Schema.Array(Repository) })
const Runners = Schema.Struct({
  runners: Schema.Array(
    Schema.Struct({
      id: Schema.Number,
      name: Schema.String,
      status: Schema.String,
      busy: Schema.Boolean,
      labels: Schema.Array(Schema.Struct({ name: Schema.String })),
      runner_group_id: Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => null })
    })
  )
})

// Lists ask for one page of 100 (GitHub's maximum) and are not paged further: an organization with more than 100
// runner groups, runners of the same name or repositories in one group is beyond what Keel manages.
const PAGE = "per_page=100"

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const unavailable = (detail: string, retryAfter: number | null = null) =>
  new RunnerProviderUnavailable({ code: "RUNNER_PROVIDER_UNAVAILABLE", detail, retry_after_seconds: retryAfter })

/** GitHub's `message`, or nothing when the body is not its error shape. */
const messageOf = (text: string) => {
  try {
    const body = JSON.parse(text) as { message?: unknown }
    return typeof body.message === "string" ? `: ${body.message}` : ""
  } catch {
    return ""
  }
}

/** Seconds to wait from `retry-after`, else from `x-ratelimit-reset` (epoch seconds), else unknown. */
const retryAfter = (headers: Headers, nowMillis: number) => {
  const after = Number(headers.get("retry-after") ?? Number.NaN)
  if (Number.isFinite(after)) return Math.max(0, Math.ceil(after))
  const reset = Number(headers.get("x-ratelimit-reset") ?? Number.NaN)
  if (Number.isFinite(reset)) return Math.max(0, Math.ceil(reset - nowMillis / 1000))
  return null
}

export interface GithubRunnerProviderOptions {
  /** Per request, reading the answer included. */
  readonly timeoutMs?: number
}

/** The RunnerProvider over GitHub's REST API (api.github.com or an Enterprise Server's /api/v3), with global fetch. */
export const makeGithubRunnerProvider = (options: GithubRunnerProviderOptions = {}): RunnerProvider["Type"] => {
  const timeoutMs = options.timeoutMs ?? 30_000

  const call = (
    scope: ProviderScope,
    method: string,
    path: string,
    body?: unknown
  ): Effect.Effect<Answer, RunnerProviderError> => {
    const what = `${method} ${path.split("?")[0]}`
    // Whatever GitHub or the network says ends up in a detail: the credential must never be part of it.
    const scrub = (text: string) => (scope.credential === "" ? text : text.split(scope.credential).join("[redacted]"))
    return Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(`${scope.apiUrl.replace(/\/+$/, "")}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${scope.credential}`,
            accept: "application/vnd.github+json",
            "x-github-api-version": "2022-11-28",
            "user-agent": "keel",
            ...(body === undefined ? {} : { "content-type": "application/json" })
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
        })
        return { status: response.status, headers: response.headers, text: await response.text() }
      },
      catch: (error) => {
        const cause = (error as { cause?: { message?: string } }).cause?.message
        const reason = (error as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : String(error)
        return unavailable(scrub(`${what}: ${reason}${cause === undefined ? "" : ` (${cause})`}`))
      }
    }).pipe(
      Effect.flatMap((answer) =>
        Effect.gen(function* () {
          const { headers, status } = answer
          if (status >= 200 && status < 300) return answer
          const detail = scrub(`${what} answered ${status}${messageOf(answer.text)}`)
          // Primary rate limit: 403 or 429 with no requests left; secondary: a retry-after on either.
          const limited =
            status === 429 ||
            (status === 403 && (headers.get("x-ratelimit-remaining") === "0" || headers.has("retry-after")))
          if (limited) return yield* unavailable(detail, retryAfter(headers, yield* Clock.currentTimeMillis))
          if (status >= 400 && status < 500)
            return yield* new RunnerProviderRefused({ code: "RUNNER_PROVIDER_REFUSED", status, detail })
          return yield* unavailable(detail)
        })
      )
    )
  }

  const decode =
    <A, I>(schema: Schema.Schema<A, I>, what: string) =>
    (answer: Answer): Effect.Effect<A, RunnerProviderUnavailable> => {
      let json: unknown
      try {
        json = JSON.parse(answer.text)
      } catch {
        return Effect.fail(unavailable(`${what}: the answer is not JSON`))
      }
      // Only the paths of what is wrong: the values may hold a token.
      return Schema.decodeUnknown(schema)(json).pipe(
        Effect.mapError((error) => {
          const paths = ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => i.path.join(".") || "(root)")
          return unavailable(
            `${what}: the answer is not GitHub's documented shape (at ${[...new Set(paths)].join(", ")})`
          )
        })
      )
    }

  const get = <A, I>(scope: ProviderScope, path: string, schema: Schema.Schema<A, I>) =>
    Effect.flatMap(call(scope, "GET", path), decode(schema, `GET ${path.split("?")[0]}`))

  const actions = (scope: ProviderScope) => `/orgs/${encodeURIComponent(scope.org)}/actions`

  const token = (scope: ProviderScope, kind: "registration-token" | "remove-token") => {
    const path = `${actions(scope)}/runners/${kind}`
    return Effect.flatMap(call(scope, "POST", path), decode(Token, `POST ${path}`))
  }

  const registrationToken: RunnerProvider["Type"]["registrationToken"] = (scope) =>
    token(scope, "registration-token").pipe(Effect.withSpan("RunnerProvider.registrationToken"))

  const removalToken: RunnerProvider["Type"]["removalToken"] = (scope) =>
    token(scope, "remove-token").pipe(Effect.withSpan("RunnerProvider.removalToken"))

  const repository: RunnerProvider["Type"]["repository"] = (scope, fullName) =>
    get(scope, `/repos/${fullName.split("/").map(encodeURIComponent).join("/")}`, Repository).pipe(
      Effect.withSpan("RunnerProvider.repository")
    )

  const ensureGroup: RunnerProvider["Type"]["ensureGroup"] = (scope, request) =>
    Effect.gen(function* () {
      const groups = `${actions(scope)}/runner-groups`
      const wanted = [...new Set(request.repositoryIds)]
      const listed = yield* get(scope, `${groups}?${PAGE}`, Groups)
      const existing = listed.runner_groups.find((g) => g.name === request.name)
      let id: number
      if (existing === undefined) {
        const created = yield* call(scope, "POST", groups, {
          name: request.name,
          visibility: "selected",
          selected_repository_ids: wanted,
          allows_public_repositories: request.allowsPublicRepositories,
          restricted_to_workflows: false
        }).pipe(Effect.flatMap(decode(Group, `POST ${groups}`)))
        id = created.id
      } else {
        id = existing.id
        yield* call(scope, "PATCH", `${groups}/${id}`, {
          visibility: "selected",
          allows_public_repositories: request.allowsPublicRepositories,
          restricted_to_workflows: false
        })
        yield* call(scope, "PUT", `${groups}/${id}/repositories`, { selected_repository_ids: wanted })
      }

      // The grant is what GitHub says it is, not what was sent: read it back and compare.
      const group = yield* get(scope, `${groups}/${id}`, Group)
      const { repositories } = yield* get(scope, `${groups}/${id}/repositories?${PAGE}`, GroupRepositories)
      const granted = new Set(repositories.map((r) => r.id))
      const differences = [
        ...(group.visibility === "selected" ? [] : [`visibility is ${group.visibility}, not selected`]),
        ...(group.restricted_to_workflows ? ["restricted_to_workflows is true, not false"] : []),
        ...(group.allows_public_repositories === request.allowsPublicRepositories
          ? []
          : [`allows_public_repositories is ${group.allows_public_repositories}`]),
        ...(granted.size === wanted.length && wanted.every((r) => granted.has(r))
          ? []
          : [
              `repositories are [${[...granted].sort((a, b) => a - b).join(", ")}], not [${[...wanted].sort((a, b) => a - b).join(", ")}]`
            ])
      ]
      if (differences.length > 0)
        return yield* new RunnerProviderMismatch({
          code: "RUNNER_PROVIDER_MISMATCH",
          detail: `runner group ${request.name} (id ${id}) reads back differently: ${differences.join("; ")}`
        })
      return {
        id: group.id,
        name: group.name,
        visibility: "selected" as const,
        allows_public_repositories: group.allows_public_repositories,
        restricted_to_workflows: false as const,
        repositories,
        created: existing === undefined
      }
    }).pipe(Effect.withSpan("RunnerProvider.ensureGroup"))

  const findRunner: RunnerProvider["Type"]["findRunner"] = (scope, name) =>
    // `name` filters on GitHub.com; a server that ignores it still answers a list, matched exactly here.
    get(scope, `${actions(scope)}/runners?name=${encodeURIComponent(name)}&${PAGE}`, Runners).pipe(
      Effect.map((page) =>
        Option.map(Option.fromNullable(page.runners.find((r) => r.name === name)), (r) => ({
          id: r.id,
          name: r.name,
          status: r.status,
          busy: r.busy,
          labels: r.labels.map((l) => l.name),
          runner_group_id: r.runner_group_id
        }))
      ),
      Effect.withSpan("RunnerProvider.findRunner")
    )

  const deleteRunner: RunnerProvider["Type"]["deleteRunner"] = (scope, id) =>
    call(scope, "DELETE", `${actions(scope)}/runners/${id}`).pipe(
      Effect.as("deleted" as const),
      Effect.catchIf(
        (error) => error._tag === "RunnerProviderRefused" && error.status === 404,
        () => Effect.succeed("absent" as const)
      ),
      Effect.withSpan("RunnerProvider.deleteRunner")
    )

  return { registrationToken, removalToken, repository, ensureGroup, findRunner, deleteRunner }
}

export const GithubRunnerProvider = Layer.succeed(RunnerProvider, makeGithubRunnerProvider())
