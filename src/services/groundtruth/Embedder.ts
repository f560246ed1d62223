import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { GtConfig } from "./GtConfig.js"

export class EmbedderFailed extends Schema.TaggedError<EmbedderFailed>()("EmbedderFailed", {
  detail: Schema.String
}) {}

/** Turns passages and questions into vectors; unit length, so a dot product is the cosine. */
export interface EmbedderShape {
  /** The model's name: vectors of different models are never compared. */
  readonly model: string
  readonly embed: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Float32Array>, EmbedderFailed>
}

/** Dense retrieval's port: `none` when no embeddings server is configured (lexical ranking alone). */
export class Embedder extends Context.Tag("groundtruth/Embedder")<Embedder, EmbedderShape | "none">() {}

export const normalize = (vector: ArrayLike<number>) => {
  const out = Float32Array.from(vector)
  let norm = 0
  for (const x of out) norm += x * x
  norm = Math.sqrt(norm)
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = out[i]! / norm
  return out
}

const EmbeddingsReply = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.optional(Schema.Int), embedding: Schema.Array(Schema.Number) }))
})

/** Inputs per request: servers (llama.cpp, Ollama, vLLM, OpenAI) accept batches; small ones time out on huge ones. */
const BATCH = 32

/**
 * An OpenAI-compatible `POST {GT_EMBEDDINGS_URL}/embeddings` ({model, input: [...], dimensions?}), which
 * llama.cpp's server, Ollama, vLLM and OpenAI all speak. Any failure (status, timeout, shape, a vector
 * count or length that does not match) is one EmbedderFailed; callers fall back to lexical ranking.
 */
export const openAiEmbedder = (settings: {
  readonly url: string
  readonly model: string
  readonly dimensions: number | undefined
  readonly apiKey: Redacted.Redacted | undefined
  readonly timeoutMs: number
}): EmbedderShape => {
  const request = (input: ReadonlyArray<string>) =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(`${settings.url}/embeddings`, {
          method: "POST",
          signal: AbortSignal.any([signal, AbortSignal.timeout(settings.timeoutMs)]),
          headers: {
            "content-type": "application/json",
            ...(settings.apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(settings.apiKey)}` })
          },
          body: JSON.stringify({
            model: settings.model,
            input,
            ...(settings.dimensions === undefined ? {} : { dimensions: settings.dimensions })
          })
        })
        if (!response.ok) throw new Error(`embeddings server answered ${response.status}`)
        return (await response.json()) as unknown
      },
      catch: (error) =>
        new EmbedderFailed({ detail: error instanceof Error ? error.message : "embeddings request failed" })
    }).pipe(
      Effect.flatMap((body) =>
        Schema.decodeUnknown(EmbeddingsReply)(body).pipe(
          Effect.mapError(() => new EmbedderFailed({ detail: "embeddings server sent a malformed reply" }))
        )
      ),
      Effect.flatMap((reply) => {
        const ordered = [...reply.data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
        const length = ordered[0]?.embedding.length ?? 0
        if (ordered.length !== input.length || length === 0 || ordered.some((d) => d.embedding.length !== length)) {
          return Effect.fail(
            new EmbedderFailed({ detail: "embeddings server sent the wrong number or size of vectors" })
          )
        }
        if (settings.dimensions !== undefined && length !== settings.dimensions) {
          return Effect.fail(
            new EmbedderFailed({ detail: `embeddings have ${length} dimensions, ${settings.dimensions} configured` })
          )
        }
        return Effect.succeed(ordered.map((d) => normalize(d.embedding)))
      })
    )
  return {
    model: settings.dimensions === undefined ? settings.model : `${settings.model}@${settings.dimensions}`,
    embed: (texts) =>
      Effect.gen(function* () {
        const out: Array<Float32Array> = []
        for (let i = 0; i < texts.length; i += BATCH) out.push(...(yield* request(texts.slice(i, i + BATCH))))
        return out
      })
  }
}

/** The embedder GT_EMBEDDINGS_URL and GT_EMBEDDINGS_MODEL configure, or `none`. */
export const EmbedderFromConfig = Layer.effect(
  Embedder,
  Effect.map(GtConfig, (config) => (config.embeddings === undefined ? "none" : openAiEmbedder(config.embeddings)))
)
