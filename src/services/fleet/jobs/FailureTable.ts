/**
 * The seed's failure substrings in per-job output, with cause and remedy, as data. `...` and `*` in a
 * pattern stand for any text on the line; ` / ` separates alternatives that mean the same failure.
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
  },
  {
    id: "preemptible_gpu_quota",
    pattern: "Quota 'PREEMPTIBLE_NVIDIA_*_GPUS' exceeded",
    cause: "regional preemptible GPU quota hit",
    remedy: "raise the quota or add zones to MACHINE_TYPE_ZONES"
  }
] as const

export type Diagnosis =
  | {
      readonly id: (typeof FailureTable)[number]["id"]
      readonly cause: string
      readonly remedy: string
      readonly matched: string
      readonly offset: number
    }
  | {
      readonly id: "unknown"
      readonly cause: null
      readonly remedy: null
      readonly matched: null
      readonly offset: null
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

const compiled = FailureTable.map((row) => ({ row, regex: compile(row.pattern) }))

/** The failure whose substring occurs first in the output; `unknown` when none does. */
export const diagnose = (output: string): Diagnosis => {
  let best: Diagnosis | undefined
  for (const { regex, row } of compiled) {
    const match = regex.exec(output)
    if (match !== null && (best === undefined || match.index < (best.offset ?? Number.POSITIVE_INFINITY))) {
      best = { id: row.id, cause: row.cause, remedy: row.remedy, matched: match[0], offset: match.index }
    }
  }
  return best ?? { id: "unknown", cause: null, remedy: null, matched: null, offset: null }
}
