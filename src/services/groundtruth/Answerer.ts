import { Effect, Redacted, Schema } from "effect"
import { GtConfig } from "./GtConfig.js"
import { Retriever } from "./Retriever.js"

export const Citation = Schema.Struct({
  repo: Schema.String,
  path: Schema.String,
  commit: Schema.String,
  line: Schema.Int,
  end_line: Schema.Int,
  snippet: Schema.String
})
export type Citation = typeof Citation.Type

export class AskAnswer extends Schema.Class<AskAnswer>("AskAnswer")({
  mode: Schema.Literal("generated", "extractive"),
  answer: Schema.NullOr(Schema.String),
  missing: Schema.Boolean,
  citations: Schema.Array(Citation)
}) {}

export const NOT_COVERED = "The indexed sources do not cover this question."

const STOPWORDS = new Set(
  "the a an and or of to in on for with is are was were be been how what when where which who why does do did can could should would will from by at as it its this that these those i you we they my our your their about into than then there here not no yes".split(
    " "
  )
)

/** The question's keywords: words of three letters or more that are not stopwords. */
export const keywords = (question: string) => [
  ...new Set(
    (
      question
        .normalize("NFKC")
        .toLowerCase()
        .match(/[\p{L}\p{N}_]+/gu) ?? []
    ).filter((w) => w.length >= 3 && !STOPWORDS.has(w))
  )
]

/** Share of the keywords the passage contains (a keyword's first five letters suffice: install ~ installs). */
export const coverage = (words: ReadonlyArray<string>, passage: string) => {
  if (words.length === 0) return 0
  const text = passage.toLowerCase()
  return words.filter((w) => text.includes(w.length > 5 ? w.slice(0, 5) : w)).length / words.length
}

const SYSTEM_PROMPT =
  "You answer questions using only the numbered sources given. Cite every claim with its source number in " +
  "square brackets, like [1]. If the sources do not answer the question, say that they do not. Never use outside knowledge."

/**
 * Answers with citations. Passages count as support only above the keyword coverage threshold
 * (GT_ASK_MIN_COVERAGE); with none, the answer says the sources do not cover the question. With a
 * language model configured, it writes an answer from numbered sources and every [n] it cites maps
 * back to a citation; an answer citing nothing, or any model failure, falls back to the extractive
 * answer (the passages themselves).
 */
export class Answerer extends Effect.Service<Answerer>()("groundtruth/Answerer", {
  effect: Effect.gen(function* () {
    const config = yield* GtConfig
    const retriever = yield* Retriever

    const generate = (question: string, citations: ReadonlyArray<Citation & { content: string }>) =>
      Effect.tryPromise({
        try: async (signal) => {
          const llm = config.llm!
          const sources = citations.map(
            (c, i) => `[${i + 1}] ${c.repo}/${c.path}:${c.line}-${c.end_line}\n${c.content}`
          )
          const response = await fetch(`${llm.baseUrl}/chat/completions`, {
            method: "POST",
            signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
            headers: {
              "content-type": "application/json",
              ...(llm.apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(llm.apiKey)}` })
            },
            body: JSON.stringify({
              model: llm.model,
              temperature: 0,
              messages: [
                { role: "system", content: SYSTEM_PROMPT },
                { role: "user", content: `Sources:\n\n${sources.join("\n\n")}\n\nQuestion: ${question}` }
              ]
            })
          })
          if (!response.ok) throw new Error(`language model answered ${response.status}`)
          const body = (await response.json()) as { choices?: Array<{ message?: { content?: unknown } }> }
          const content = body.choices?.[0]?.message?.content
          if (typeof content !== "string" || content.trim() === "") throw new Error("language model sent no answer")
          return content.trim()
        },
        catch: (error) => (error instanceof Error ? error : new Error(String(error)))
      })

    const ask = Effect.fn("Answerer.ask")(function* (question: string, repos: ReadonlyArray<string> | undefined) {
      const words = keywords(question)
      const hits = yield* retriever.retrieve(question, { repos, limit: config.askSources * 2 })
      const supported = hits
        .filter((hit) => coverage(words, `${hit.heading}\n${hit.content}`) >= config.askMinCoverage)
        .slice(0, config.askSources)
      const citations = supported.map((hit) => ({
        repo: hit.repo,
        path: hit.path,
        commit: hit.commit,
        line: hit.line,
        end_line: hit.end_line,
        snippet: hit.snippet,
        content: hit.content
      }))
      const cite = (list: ReadonlyArray<(typeof citations)[number]>) =>
        list.map(({ content: _c, ...citation }) => citation)
      if (citations.length === 0) {
        return new AskAnswer({
          mode: config.llm ? "generated" : "extractive",
          answer: NOT_COVERED,
          missing: true,
          citations: []
        })
      }
      const extractive = new AskAnswer({ mode: "extractive", answer: null, missing: false, citations: cite(citations) })
      if (config.llm === undefined) return extractive
      const generated = yield* Effect.either(generate(question, citations))
      if (generated._tag === "Left") {
        yield* Effect.logWarning("language model failed; answering extractively").pipe(
          Effect.annotateLogs("detail", generated.left.message)
        )
        return extractive
      }
      const cited = [...new Set([...generated.right.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))]
        .filter((n) => n >= 1 && n <= citations.length)
        .sort((a, b) => a - b)
      if (cited.length === 0) {
        yield* Effect.logWarning("language model answer cited no source; answering extractively")
        return extractive
      }
      // Citations are returned in the order first cited and the answer's markers renumbered to match;
      // a marker naming no source is removed rather than left pointing nowhere.
      const renumber = new Map(cited.map((n, i) => [n, i + 1]))
      const answer = generated.right.replace(/\[(\d+)\]/g, (_m, n: string) => {
        const to = renumber.get(Number(n))
        return to === undefined ? "" : `[${to}]`
      })
      return new AskAnswer({
        mode: "generated",
        answer,
        missing: false,
        citations: cite(cited.map((n) => citations[n - 1]!))
      })
    })

    return { ask } as const
  })
}) {}
