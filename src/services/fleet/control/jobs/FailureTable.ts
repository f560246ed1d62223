import type { FailureRow, ProviderAdapter } from "../../shared/providers/ProviderAdapter.js"

/**
 * The seed's failure substrings in per-job output that any job may show, with cause and remedy, as data. `...` and
 * `*` in a pattern stand for any text on the line; ` / ` separates alternatives that mean the same failure. A
 * provider's own failures (the GPU quota of Google Compute Engine) live in its adapter (src/services/fleet/providers)
 * and are matched only when the selected profile enables it.
 */
export const FailureTable = [
  {
    id: "hub_rate_limit",
    pattern: "HfHubHTTPError: 429",
    cause: "model-hub rate limit (free tier 1000 requests per 5 minutes)",
    remedy: "wait for the window to pass, or authenticate to the hub with a higher limit"
  },
  {
    id: "dataset_cache_miss",
    pattern: "Couldn't find cache for",
    cause: "dataset cache miss for a configuration the dataset repository lacks",
    remedy: "name a configuration the dataset repository has"
  },
  {
    id: "tokenizer_max_length_overflow",
    pattern: "OverflowError: int too big to convert",
    cause: "tokenizer maximum length was a sentinel passed to a 32-bit unsigned binding",
    remedy: "cap the tokenizer's maximum length at 4096"
  },
  {
    id: "dataset_scripts_unsupported",
    pattern: "Dataset scripts are no longer supported",
    cause: "dataset library major version dropped script loaders",
    remedy: "pin the datasets library below 4.0"
  },
  {
    id: "hub_pin_mismatch",
    pattern: "huggingface-hub>=0.34.0,<1.0 is required",
    cause: "dependency pin mismatch",
    remedy: "pin the hub library below 1.0"
  },
  {
    id: "numba_threads_late",
    pattern: "RuntimeError: Cannot set NUMBA_NUM_THREADS",
    cause: "thread variable must be set before the interpreter starts",
    remedy: "set NUMBA_NUM_THREADS in the job's environment, not in code"
  },
  {
    id: "safetensors_shard_names",
    pattern: "does not appear to have files named",
    cause: "shard-name miscomputation for some zero-indexed safetensors models",
    remedy: "upgrade transformers to a release with the fix"
  },
  {
    id: "hook_wrong_model_path",
    pattern: "AttributeError: ... has no attribute 'transformer'",
    cause: "hook assumed the wrong model path for one model family",
    remedy: "fix the hook's model path for that family"
  },
  {
    id: "workload_credential_denied",
    pattern: "gated repo / 401 Client Error",
    cause: "the scoped workload credential cannot read the repository",
    remedy: "rotate it through the stdin-only vault path"
  }
] as const satisfies ReadonlyArray<FailureRow>

export type Diagnosis =
  | {
      readonly id: string
      readonly cause: string
      readonly remedy: string
      readonly matched: string
      readonly offset: number
      /** The provider adapter whose diagnostic this is; null for a failure any job may show. */
      readonly provider: string | null
    }
  | {
      readonly id: "unknown"
      readonly cause: null
      readonly remedy: null
      readonly matched: null
      readonly offset: null
      readonly provider: null
    }

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A pattern as a regular expression: literal text, with `...` and `*` matching within one line. */
const compile = (pattern: string) =>
  new RegExp(
    pattern
      .split(" / ")
      .map((alternative) =>
        alternative
          .split(/(\.\.\.|\*)/)
          .map((part) => (part === "..." || part === "*" ? "[^\\n]*?" : escapeRegex(part)))
          .join("")
      )
      .join("|")
  )

interface Compiled {
  readonly row: FailureRow
  readonly provider: string | null
  readonly regex: RegExp
}

const generic: ReadonlyArray<Compiled> = FailureTable.map((row) => ({
  row,
  provider: null,
  regex: compile(row.pattern)
}))
const byProvider = new Map<string, ReadonlyArray<Compiled>>()
const rowsOf = (adapter: ProviderAdapter) => {
  let rows = byProvider.get(adapter.name)
  if (rows === undefined) {
    rows = adapter.diagnostics.map((row) => ({ row, provider: adapter.name, regex: compile(row.pattern) }))
    byProvider.set(adapter.name, rows)
  }
  return rows
}

/**
 * The failure whose substring occurs first in the output, among the rows any job may show and those of the enabled
 * provider adapters (none unless given); `unknown` when none does.
 */
export const diagnose = (output: string, providers: ReadonlyArray<ProviderAdapter> = []): Diagnosis => {
  let best: Diagnosis | undefined
  for (const { provider, regex, row } of [...generic, ...providers.flatMap(rowsOf)]) {
    const match = regex.exec(output)
    if (match !== null && (best === undefined || match.index < (best.offset ?? Number.POSITIVE_INFINITY))) {
      best = { id: row.id, cause: row.cause, remedy: row.remedy, matched: match[0], offset: match.index, provider }
    }
  }
  return best ?? { id: "unknown", cause: null, remedy: null, matched: null, offset: null, provider: null }
}
