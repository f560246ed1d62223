import { useEffect, useState } from "preact/hooks"
import { api, type Refusal } from "../../lib/api.js"
import { Refused } from "../../lib/Refused.js"
import { type Cited, citationHref, gitShow, lineRange } from "./links.js"
import "./groundtruth.css"

/**
 * Ground truth (docs/groundtruth.md): search the ingested sources and ask a question, through the typed ground-truth
 * client. Every citation names its repository, path, commit and lines, and links to them when the source has a web
 * page; an answer the sources do not cover is shown as "not covered", never as an error.
 */

interface SearchHit extends Cited {
  readonly heading: string
  readonly snippet: string
  readonly score: number
  readonly trust: string
}
interface Citation extends Cited {
  readonly snippet: string
  readonly supports: boolean
}
interface Answer {
  readonly mode: "generated" | "extractive"
  readonly answer: string | null
  readonly missing: boolean
  readonly citations: ReadonlyArray<Citation>
}

type State<A> =
  | { readonly kind: "idle" }
  | { readonly kind: "loading" }
  | { readonly kind: "done"; readonly value: A }
  | { readonly kind: "refused"; readonly refusal: Refusal }

/** The repository URL of each source (`GET /repos`), for the citations' links. */
const useSourceUrls = () => {
  const [urls, setUrls] = useState<ReadonlyMap<string, string>>(new Map())
  useEffect(() => {
    let live = true
    void api
      .groundTruth((client) => client.read.repos())
      .then((outcome) => {
        if (live && outcome.ok) setUrls(new Map(outcome.value.map((repo) => [repo.name, repo.url])))
      })
    return () => {
      live = false
    }
  }, [])
  return urls
}

const CitationLine = ({ cited, url }: { cited: Cited; url: string | undefined }) => {
  const href = citationHref(cited, url)
  const where = (
    <>
      <span class="cite-repo">{cited.repo}</span>
      {" / "}
      <span class="cite-path">{cited.path}</span>
    </>
  )
  return (
    <div class="citation">
      <div>
        {href === undefined ? (
          <strong>{where}</strong>
        ) : (
          <a class="cite-link" href={href} target="_blank" rel="noopener noreferrer">
            {where}
          </a>
        )}{" "}
        <span class="cite-lines">{lineRange(cited)}</span>
        {" at commit "}
        <code class="cite-commit">{cited.commit}</code>
      </div>
      {href === undefined && (
        <div class="muted small">
          A local checkout, no web page to link to; these lines: <code class="cite-command">{gitShow(cited, url)}</code>
        </div>
      )}
    </div>
  )
}

const SearchPanel = ({ urls }: { urls: ReadonlyMap<string, string> }) => {
  const [query, setQuery] = useState(new URLSearchParams(window.location.search).get("q") ?? "")
  const [state, setState] = useState<State<{ query: string; hits: ReadonlyArray<SearchHit> }>>({ kind: "idle" })
  const search = async (q: string) => {
    if (q.trim() === "") return
    setState({ kind: "loading" })
    const outcome = await api.groundTruth((client) => client.read.search({ urlParams: { q: q.trim() } }))
    setState(outcome.ok ? { kind: "done", value: outcome.value } : { kind: "refused", refusal: outcome.refusal })
  }
  return (
    <section aria-labelledby="gt-search">
      <h2 id="gt-search">Search</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          void search(query)
        }}
      >
        <label>
          Search the sources
          <input
            type="search"
            name="q"
            value={query}
            maxLength={1000}
            onInput={(event) => setQuery((event.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={state.kind === "loading"}>
          Search
        </button>
      </form>
      <div aria-live="polite">
        {state.kind === "loading" && <p class="muted">Searching…</p>}
        {state.kind === "refused" && <Refused refusal={state.refusal} />}
        {state.kind === "done" &&
          (state.value.hits.length === 0 ? (
            <p class="gt-empty">No passage matches “{state.value.query}”.</p>
          ) : (
            <ol class="gt-hits" aria-label="search results">
              {state.value.hits.map((hit) => (
                <li class="gt-hit">
                  <div class="gt-heading">{hit.heading}</div>
                  <CitationLine cited={hit} url={urls.get(hit.repo)} />
                  <pre>{hit.snippet}</pre>
                </li>
              ))}
            </ol>
          ))}
      </div>
    </section>
  )
}

const AskPanel = ({ urls }: { urls: ReadonlyMap<string, string> }) => {
  const [question, setQuestion] = useState("")
  const [state, setState] = useState<State<Answer>>({ kind: "idle" })
  const ask = async () => {
    if (question.trim() === "") return
    setState({ kind: "loading" })
    const outcome = await api.groundTruth((client) =>
      client.ask.ask({ payload: { question: question.trim(), scope: {} } })
    )
    setState(outcome.ok ? { kind: "done", value: outcome.value } : { kind: "refused", refusal: outcome.refusal })
  }
  return (
    <section aria-labelledby="gt-ask">
      <h2 id="gt-ask">Ask</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          void ask()
        }}
      >
        <label class="wide">
          Question
          <textarea
            name="question"
            rows={2}
            maxLength={2000}
            value={question}
            onInput={(event) => setQuestion((event.target as HTMLTextAreaElement).value)}
            onKeyDown={(event) => {
              if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
                event.preventDefault()
                void ask()
              }
            }}
          />
        </label>
        <button type="submit" disabled={state.kind === "loading"}>
          Ask
        </button>
      </form>
      <div aria-live="polite">
        {state.kind === "loading" && <p class="muted">Asking…</p>}
        {state.kind === "refused" && <Refused refusal={state.refusal} />}
        {state.kind === "done" && <AnswerView answer={state.value} urls={urls} />}
      </div>
    </section>
  )
}

const AnswerView = ({ answer, urls }: { answer: Answer; urls: ReadonlyMap<string, string> }) =>
  answer.missing ? (
    <div class="gt-answer gt-not-covered">
      <p class="warning" role="status">
        <strong>Not covered.</strong> {answer.answer ?? "The indexed sources do not cover this question."}
      </p>
      {answer.citations.length > 0 && (
        <>
          <h3>Passages examined (they do not answer it)</h3>
          <ol class="gt-citations" aria-label="passages examined">
            {answer.citations.map((citation) => (
              <li class="gt-citation">
                <CitationLine cited={citation} url={urls.get(citation.repo)} />
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  ) : (
    <div class="gt-answer gt-covered">
      <p class="muted small">
        {answer.mode === "generated" ? "Generated from the passages below" : "The supporting passages (extractive)"}
      </p>
      {answer.answer !== null && <pre class="gt-answer-text">{answer.answer}</pre>}
      <h3>Citations</h3>
      <ol class="gt-citations" aria-label="citations">
        {answer.citations.map((citation) => (
          <li class="gt-citation">
            <CitationLine cited={citation} url={urls.get(citation.repo)} />
            <pre>{citation.snippet}</pre>
          </li>
        ))}
      </ol>
    </div>
  )

export const GroundTruthPage = () => {
  const urls = useSourceUrls()
  return (
    <section class="groundtruth">
      <h1>Ground truth</h1>
      <p class="muted">
        Search and ask over the ingested sources; every citation names its repository, path, commit and lines. Reads
        with no credential from this machine (loopback); a server with <code>GT_TOKENS</code> needs one of them.
      </p>
      <div class="grid gt-panels">
        <SearchPanel urls={urls} />
        <AskPanel urls={urls} />
      </div>
    </section>
  )
}
