/**
 * A failure a provider's own messages reveal in a job's output, with its cause and a remedy. `...` and `*` in a
 * pattern stand for any text on the line; ` / ` separates alternatives that mean the same failure.
 */
export interface FailureRow {
  readonly id: string
  readonly pattern: string
  readonly cause: string
  readonly remedy: string
}

/**
 * A provider adapter: what Keel knows of one provider, offered only when the selected profile enables it
 * (seed 002: "provider-specific diagnostics live inside the matching adapter"). Today that is its diagnostics.
 */
export interface ProviderAdapter {
  readonly name: string
  readonly title: string
  readonly diagnostics: ReadonlyArray<FailureRow>
}
