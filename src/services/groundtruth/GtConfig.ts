import * as path from "node:path"
import { Config, ConfigError, Effect, Option, Redacted } from "effect"
import { AppConfig } from "../platform/AppConfig.js"

/** `tier=weight,…`; anything else is a configuration error naming the pair (a silently dropped tier refused every source of it later). */
const parseWeights = (text: string): Map<string, number> | string => {
  const weights = new Map<string, number>()
  for (const pair of text.split(",").filter((p) => p.trim() !== "")) {
    const [name, value, ...rest] = pair.split("=").map((s) => s.trim())
    const weight = Number(value)
    if (!name || value === undefined || value === "" || rest.length > 0 || !Number.isFinite(weight) || weight < 0)
      return `${JSON.stringify(pair.trim().slice(0, 40))} is not tier=weight (a number, 0 or more)`
    weights.set(name, weight)
  }
  return weights.size === 0 ? "names no tier (tier=weight,…)" : weights
}

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
    const chunkMaxLines = yield* Config.integer("GT_CHUNK_MAX_LINES").pipe(Config.withDefault(40))
    const chunkOverlapLines = yield* Config.integer("GT_CHUNK_OVERLAP_LINES").pipe(Config.withDefault(5))
    const maxFileBytes = yield* Config.integer("GT_MAX_FILE_BYTES").pipe(Config.withDefault(512 * 1024))
    const blobUrlPattern = yield* Config.string("GT_BLOB_URL_PATTERN").pipe(
      Config.withDefault("{web_url}/blob/{commit}/{path}")
    )
    const llmBaseUrl = yield* Config.option(Config.string("GT_LLM_BASE_URL"))
    const llmModel = yield* Config.option(Config.string("GT_LLM_MODEL"))
    const llmApiKey = yield* Config.option(Config.redacted("GT_LLM_API_KEY"))
    const askSources = yield* Config.integer("GT_ASK_SOURCES").pipe(Config.withDefault(5))
    const embeddingsUrl = yield* Config.option(Config.string("GT_EMBEDDINGS_URL"))
    const embeddingsModel = yield* Config.string("GT_EMBEDDINGS_MODEL").pipe(Config.withDefault("default"))
    const embeddingsDimensions = yield* Config.option(Config.integer("GT_EMBEDDINGS_DIMENSIONS"))
    const embeddingsApiKey = yield* Config.option(Config.redacted("GT_EMBEDDINGS_API_KEY"))
    const embeddingsTimeout = yield* Config.integer("GT_EMBEDDINGS_TIMEOUT_MS").pipe(Config.withDefault(10_000))
    const embeddingsWeight = yield* Config.number("GT_EMBEDDINGS_WEIGHT").pipe(Config.withDefault(1))
    const missingScore = yield* Config.number("GT_ASK_MIN_SCORE").pipe(Config.withDefault(0.2))
    const annMinVectors = yield* Config.integer("GT_ANN_MIN_VECTORS").pipe(Config.withDefault(10_000))
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
          timeoutMs: Math.max(100, embeddingsTimeout),
          /** The dense list's weight in the fusion (the lexical lists weigh 1). */
          weight: Math.max(0, embeddingsWeight)
        })
      }),
      /** Below this support score (0..1, see docs/groundtruth.md) the best passage does not answer the question. */
      askMinScore: missingScore,
      askSources: Math.max(1, Math.min(20, askSources)),
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
      chunkMaxLines: Math.max(1, chunkMaxLines),
      chunkOverlapLines: Math.max(0, Math.min(chunkOverlapLines, chunkMaxLines - 1)),
      maxFileBytes,
      blobUrlPattern,
      mirrorsDir: path.join(app.dataDir, "groundtruth", "mirrors"),
      /**
       * From this many stored vectors on, dense search walks an HNSW graph (built in the background once per
       * index generation; exact brute force until it is ready); below it, brute force is exact and fast enough.
       */
      annMinVectors: Math.max(1, annMinVectors),
      /** Where graph builds write their file before it is memory-mapped (and unlinked). */
      annDir: path.join(app.dataDir, "groundtruth", "ann")
    } as const
  })
}) {}
