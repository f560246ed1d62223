import { Effect, Redacted } from "effect"
import { AskAnswer, type Citation } from "../../contracts/groundtruth/Ask.js"
import { abstain, EXAMINED_DEPTH } from "./Abstention.js"
import { GtConfig } from "./GtConfig.js"
import { Retriever } from "./Retriever.js"
import { Sources } from "./Sources.js"
import { salientTerms, stem, stems } from "./Terms.js"

export const NOT_COVERED = "The indexed sources do not cover this question."

/** What the model is told to reply, alone, when its sources do not answer the question. */
export const MODEL_NOT_COVERED = "NOT_COVERED"

const SYSTEM_PROMPT =
  "You answer questions using only the numbered sources given. Cite every claim with its source number in " +
  `square brackets, like [1]. If the sources do not answer the question, reply with exactly ${MODEL_NOT_COVERED} ` +
  "and nothing else. Never use outside knowledge."

/**
 * The support check of a generated answer: the names it states (identifiers, versions, numbers, flags —
 * salientTerms) must each appear in the passages it cites. An answer naming something its sources never
 * say is not grounded. Returns the unsupported terms.
 */
export const unsupportedTerms = (answer: string, cited: ReadonlyArray<{ readonly content: string }>) => {
  const text = cited
    .map((c) => c.content)
    .join("\n")
    .toLowerCase()
  const present = stems(text)
  return salientTerms(answer.replace(/\[\d+\]/g, " ")).filter(
    (term) => !text.includes(term) && !present.has(stem(term))
  )
}

/**
 * Answers with citations: the best `k` passages of the hybrid ranking. When the grounded-abstention
 * rule (Abstention.abstain) says the passages do not support the question, the answer says the sources do
 * not cover it, and still cites the passages it examined, each with `supports: false`. With a language model configured, it writes an answer from numbered sources and every
 * [n] it cites maps back to a citation; an answer citing nothing, or any model failure, falls back to
 * the extractive answer (the passages themselves).
 */
export class Answerer extends Effect.Service<Answerer>()("groundtruth/Answerer", {
  effect: Effect.gen(function* () {
    const config = yield* GtConfig
    const retriever = yield* Retriever
    const sources = yield* Sources

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

    /**
     * The question ranked, and the abstention rule's verdict on the passages: what `ask` answers from,
     * and what eval/groundtruth/fit-abstention.mjs fits the rule on.
     */
    const examine = Effect.fn("Answerer.examine")(function* (
      question: string,
      repos: ReadonlyArray<string> | undefined,
      count: number
    ) {
      const hits = yield* retriever.retrieve(question, { repos, limit: Math.max(count, EXAMINED_DEPTH) })
      const registry = yield* sources.current
      const salient = salientTerms(question)
      const profile = yield* retriever.profile(question)
      const weights = profile?.weights ?? new Map<string, number>()
      const df = yield* retriever.frequencies([...new Set([...salient.map(stem), ...weights.keys()])])
      const verdict = abstain({ weights, salient, documentFrequency: (s) => df.get(s) ?? 0 }, hits, {
        minSupport: config.askMinScore,
        sourceNames: registry.sources.map((s) => s.name)
      })
      return { hits, verdict }
    })

    const ask = Effect.fn("Answerer.ask")(function* (
      question: string,
      repos: ReadonlyArray<string> | undefined,
      k: number = config.askSources
    ) {
      const count = Math.max(1, Math.min(20, k))
      const { hits, verdict } = yield* examine(question, repos, count)
      const citations = hits.slice(0, count).map((hit) => ({
        repo: hit.repo,
        path: hit.path,
        commit: hit.commit,
        line: hit.line,
        end_line: hit.end_line,
        snippet: hit.snippet,
        supports: true,
        content: hit.content
      }))
      const cite = (list: ReadonlyArray<(typeof citations)[number]>) =>
        list.map(({ content: _c, ...citation }) => citation)
      // Not covered: the passages examined come back all the same, each marked as not supporting an answer.
      const notCovered = (mode: AskAnswer["mode"]) =>
        new AskAnswer({
          mode,
          answer: NOT_COVERED,
          missing: true,
          citations: cite(citations).map((citation) => ({ ...citation, supports: false }))
        })
      if (verdict.missing) {
        yield* Effect.logDebug("question not covered").pipe(
          Effect.annotateLogs({
            reason: verdict.reason,
            support: verdict.support,
            score: verdict.score,
            unknown: verdict.unknown.join(",")
          })
        )
        return notCovered(config.llm ? "generated" : "extractive")
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
      if (generated.right.trim() === MODEL_NOT_COVERED) return notCovered("generated")
      // In the order first cited (a Set keeps first occurrences in order).
      const cited = [...new Set([...generated.right.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].filter(
        (n) => n >= 1 && n <= citations.length
      )
      if (cited.length === 0) {
        yield* Effect.logWarning("language model answer cited no source; answering extractively")
        return extractive
      }
      const unsupported = unsupportedTerms(
        generated.right,
        cited.map((n) => citations[n - 1]!)
      )
      if (unsupported.length > 0) {
        yield* Effect.logWarning(
          "language model answer names what its sources do not say; answering extractively"
        ).pipe(Effect.annotateLogs("unsupported", unsupported.join(", ")))
        return extractive
      }
      // Citations are returned in the order first cited and the answer's markers renumbered to match;
      // a marker naming no source is removed rather than left pointing nowhere.
      const renumber = new Map(cited.map((n, i) => [n, i + 1]))
      const answer = generated.right.replace(/(\s*)\[(\d+)\]/g, (_m, space: string, n: string) => {
        const to = renumber.get(Number(n))
        return to === undefined ? "" : `${space}[${to}]`
      })
      return new AskAnswer({
        mode: "generated",
        answer,
        missing: false,
        citations: cite(cited.map((n) => citations[n - 1]!))
      })
    })

    return { ask, examine } as const
  })
}) {}
