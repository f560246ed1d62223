import * as path from "node:path"
import { Config, ConfigError, Effect, Option, Redacted } from "effect"
import { AppConfig } from "../platform/AppConfig.js"

/** `tier=weight,…`; anything else is a configuration error naming the pair (a silently dropped tier refused every source of it later). */
const parseWeights = (text: string): Map<string, number> | string => {
  const weights = new Map<string, number>()
  for (const pair of text.split(",")) {
    const [name, value, ...rest] = pair.split("=").map((s) => s.trim())
    // A decimal number written as such (`0x10` or `Infinity` is no weight).
    const decimal = value !== undefined && /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(value)
    const weight = Number(value)
    if (!name || !decimal || rest.length > 0 || !Number.isFinite(weight))
      return `${JSON.stringify(pair.trim().slice(0, 40))} is not tier=weight (a tier name, a decimal 0 or more)`
    if (weights.has(name)) return `the tier ${name} is given twice`
    weights.set(name, weight)
  }
  return weights
}

/** An integer setting within [min, max]; outside it the process stops at start naming the setting and its range. */
const integerSetting = (name: string, fallback: number, min: number, max: number) =>
  Config.integer(name).pipe(
    Config.validate({
      message: `must be an integer from ${min} to ${max}`,
      validation: (n) => n >= min && n <= max
    }),
    Config.withDefault(fallback)
  )

/** A number setting within [min, max] (finite). */
const numberSetting = (name: string, fallback: number, min: number, max: number) =>
  Config.number(name).pipe(
    Config.validate({
      message: `must be a number from ${min} to ${max}`,
      validation: (n) => Number.isFinite(n) && n >= min && n <= max
    }),
    Config.withDefault(fallback)
  )

/** Settings of the ground-truth service (docs/configuration.md). */
export class GtConfig extends Effect.Service<GtConfig>()("groundtruth/GtConfig", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const registryRepo = yield* Config.option(Config.string("GT_REGISTRY_REPO"))
    const registryRef = yield* Config.option(Config.string("GT_REGISTRY_REF"))
    const tokens = yield* Config.redacted("GT_TOKENS").pipe(Config.option)
    const weightsText = yield* Config.string("GT_TRUST_WEIGHTS").pipe(
      Config.withDefault("canonical=1,reference=0.8,community=0.6")
    )
    const weights = parseWeights(weightsText)
    if (typeof weights === "string") return yield* Effect.fail(ConfigError.InvalidData(["GT_TRUST_WEIGHTS"], weights))
    const chunkMaxLines = yield* integerSetting("GT_CHUNK_MAX_LINES", 40, 1, 1000)
    // Unset, the overlap is 5 lines, or fewer when chunks are that short; set, it must fit the chunk.
    const chunkOverlapLines = yield* integerSetting("GT_CHUNK_OVERLAP_LINES", Math.min(5, chunkMaxLines - 1), 0, 999)
    if (chunkOverlapLines >= chunkMaxLines)
      return yield* Effect.fail(
        ConfigError.InvalidData(["GT_CHUNK_OVERLAP_LINES"], `must be less than GT_CHUNK_MAX_LINES (${chunkMaxLines})`)
      )
    const maxFileBytes = yield* integerSetting("GT_MAX_FILE_BYTES", 512 * 1024, 1, 1024 ** 3)
    const blobUrlPattern = yield* Config.string("GT_BLOB_URL_PATTERN").pipe(
      Config.withDefault("{web_url}/blob/{commit}/{path}")
    )
    const llmBaseUrl = yield* Config.option(Config.string("GT_LLM_BASE_URL"))
    const llmModel = yield* Config.option(Config.string("GT_LLM_MODEL"))
    const llmApiKey = yield* Config.option(Config.redacted("GT_LLM_API_KEY"))
    const askSources = yield* integerSetting("GT_ASK_SOURCES", 5, 1, 20)
    const embeddingsUrl = yield* Config.option(Config.string("GT_EMBEDDINGS_URL"))
    const embeddingsModel = yield* Config.string("GT_EMBEDDINGS_MODEL").pipe(Config.withDefault("default"))
    const embeddingsDimensions = yield* Config.option(
      Config.integer("GT_EMBEDDINGS_DIMENSIONS").pipe(
        Config.validate({ message: "must be an integer from 1 to 65536", validation: (n) => n >= 1 && n <= 65536 })
      )
    )
    const embeddingsApiKey = yield* Config.option(Config.redacted("GT_EMBEDDINGS_API_KEY"))
    const embeddingsTimeout = yield* integerSetting("GT_EMBEDDINGS_TIMEOUT_MS", 10_000, 100, 3_600_000)
    const embeddingsWeight = yield* numberSetting("GT_EMBEDDINGS_WEIGHT", 1, 0, 100)
    const missingScore = yield* numberSetting("GT_ASK_MIN_SCORE", 0.2, 0, 1)
    const annMinVectors = yield* integerSetting("GT_ANN_MIN_VECTORS", 10_000, 1, Number.MAX_SAFE_INTEGER)
    return {
      /** An OpenAI-compatible chat-completions endpoint; both base URL and model are needed to use it. */
      llm:
        llmBaseUrl._tag === "Some" && llmModel._tag === "Some"
          ? {
              baseUrl: llmBaseUrl.value.replace(/\/+$/, ""),
              model: llmModel.value,
              apiKey: Option.getOrUndefined(llmApiKey)
            }
          : undefined,
      /**
       * An OpenAI-compatible embeddings endpoint (`{url}/embeddings`) for dense retrieval; unset = lexical only.
       * The model name (with its dimensions) keys the stored vectors: changing it recomputes them.
       */
      embeddings: Option.match(embeddingsUrl, {
        onNone: () => undefined,
        onSome: (url) => ({
          url: url.replace(/\/+$/, ""),
          model: embeddingsModel,
          dimensions: Option.getOrUndefined(embeddingsDimensions),
          apiKey: Option.getOrUndefined(embeddingsApiKey),
          timeoutMs: embeddingsTimeout,
          /** The dense list's weight in the fusion (the lexical lists weigh 1). */
          weight: embeddingsWeight
        })
      }),
      /** Below this support score (0..1, see docs/groundtruth.md) the best passage does not answer the question. */
      askMinScore: missingScore,
      askSources,
      /**
       * Git URL or local path of the documentation repository holding sources.yml and brand-assets.yml.
       * Unset: the local registry under the data dir (created by the demo data on first start).
       */
      registryRepo: Option.getOrElse(registryRepo, () => path.join(app.dataDir, "groundtruth", "registry")),
      registryIsDefault: registryRepo._tag === "None",
      registryRef: Option.getOrUndefined(registryRef),
      /** Bearer tokens accepted by every endpoint but /health; none configured = loopback clients only. */
      tokens: Option.match(tokens, {
        onNone: () => new Set<string>(),
        onSome: (value) =>
          new Set(
            Redacted.value(value)
              .split(",")
              .map((t) => t.trim())
              .filter((t) => t.length > 0)
          )
      }),
      trustWeights: weights,
      chunkMaxLines,
      chunkOverlapLines,
      maxFileBytes,
      blobUrlPattern,
      mirrorsDir: path.join(app.dataDir, "groundtruth", "mirrors"),
      /**
       * From this many stored vectors on, dense search walks an HNSW graph (built in the background once per
       * index generation; exact brute force until it is ready); below it, brute force is exact and fast enough.
       */
      annMinVectors,
      /** Where graph builds write their file before it is memory-mapped (and unlinked). */
      annDir: path.join(app.dataDir, "groundtruth", "ann")
    } as const
  })
}) {}
