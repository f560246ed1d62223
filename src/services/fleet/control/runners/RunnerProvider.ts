import { Context, type Effect, type Option, Schema } from "effect"

/** One organization at a runner provider. */
export interface ProviderScope {
  /** The REST API base: https://api.github.com, or https://<ghes host>/api/v3 (a trailing slash is fine). */
  readonly apiUrl: string
  readonly org: string
  /** The credential as the caller read it from the vault: sent as a bearer token, never logged nor in an error. */
  readonly credential: string
}

/** A registration or removal token for the runner's own `config.sh`; it expires after an hour. */
export interface RunnerToken {
  readonly token: string
  readonly expires_at: string
}

export interface ProviderRepository {
  readonly id: number
  readonly full_name: string
  readonly private: boolean
}

export interface RunnerGroupRequest {
  readonly name: string
  readonly repositoryIds: ReadonlyArray<number>
  readonly allowsPublicRepositories: boolean
}

/** A runner group as the provider reads it back after `ensureGroup` wrote it. */
export interface RunnerGroup {
  readonly id: number
  readonly name: string
  readonly visibility: "selected"
  readonly allows_public_repositories: boolean
  readonly restricted_to_workflows: false
  readonly repositories: ReadonlyArray<ProviderRepository>
  /** True when this call created the group, false when it updated an existing one. */
  readonly created: boolean
}

export interface ProviderRunner {
  readonly id: number
  readonly name: string
  readonly status: string
  readonly busy: boolean
  readonly labels: ReadonlyArray<string>
  readonly runner_group_id: number | null
}

/** The provider refused the request (a 4xx other than rate limiting): retrying the same request will not help. */
export class RunnerProviderRefused extends Schema.TaggedError<RunnerProviderRefused>()("RunnerProviderRefused", {
  code: Schema.Literal("RUNNER_PROVIDER_REFUSED"),
  status: Schema.Number,
  detail: Schema.String
}) {}

/** The provider could not be asked or answered nothing usable (network, timeout, 5xx, rate limit): worth a retry. */
export class RunnerProviderUnavailable extends Schema.TaggedError<RunnerProviderUnavailable>()(
  "RunnerProviderUnavailable",
  {
    code: Schema.Literal("RUNNER_PROVIDER_UNAVAILABLE"),
    detail: Schema.String,
    /** When the provider said how long to wait (rate limiting); null otherwise. */
    retry_after_seconds: Schema.NullOr(Schema.Number)
  }
) {}

/** What the provider reads back differs from what was written: the grant is not what the registry says. */
export class RunnerProviderMismatch extends Schema.TaggedError<RunnerProviderMismatch>()("RunnerProviderMismatch", {
  code: Schema.Literal("RUNNER_PROVIDER_MISMATCH"),
  detail: Schema.String
}) {}

export type RunnerProviderError = RunnerProviderRefused | RunnerProviderUnavailable

/**
 * The port to the code host that lists the self-hosted runners (docs/runners.md, "The provider"). Keel only asks
 * for short-lived tokens, the runner group's grant and the runner's record: registering and unregistering is the
 * runner's own `config.sh`, run on its host with one of these tokens.
 */
export class RunnerProvider extends Context.Tag("fleet/RunnerProvider")<
  RunnerProvider,
  {
    readonly registrationToken: (scope: ProviderScope) => Effect.Effect<RunnerToken, RunnerProviderError>
    readonly removalToken: (scope: ProviderScope) => Effect.Effect<RunnerToken, RunnerProviderError>
    /** A repository by its "owner/name". */
    readonly repository: (
      scope: ProviderScope,
      fullName: string
    ) => Effect.Effect<ProviderRepository, RunnerProviderError>
    /**
     * Creates or updates the named group so that it grants exactly `repositoryIds` (visibility selected, no
     * workflow restriction), then returns what the provider reads back; a difference is a mismatch.
     */
    readonly ensureGroup: (
      scope: ProviderScope,
      request: RunnerGroupRequest
    ) => Effect.Effect<RunnerGroup, RunnerProviderError | RunnerProviderMismatch>
    /** The runner registered under exactly this name, if any. */
    readonly findRunner: (
      scope: ProviderScope,
      name: string
    ) => Effect.Effect<Option.Option<ProviderRunner>, RunnerProviderError>
    readonly deleteRunner: (
      scope: ProviderScope,
      id: number
    ) => Effect.Effect<"deleted" | "absent", RunnerProviderError>
  }
>() {}
