/**
 * The words of questions and passages as ranking compares them: lower-case, NFKC, split into letters
 * and digits of any script, and reduced by a light suffix stemmer, so "installing", "installs" and
 * "installed" meet "install". Identifiers are also split at case and `_`/`.`/`-` boundaries
 * ("bodyLimit" → "body", "limit"), because prose writes what code joins.
 */

const STOPWORDS = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below " +
    "between both but by can cannot could did do does doing done down during each either else etc even ever every " +
    "few for from further get gets getting got had has have having he her here hers him his how i if in into is it " +
    "its itself just let like likely made make makes many may me might more most much must my need needs no nor not " +
    "now of off often on once one only onto or other others otherwise our ours out over own per please rather really " +
    "same say says she should so some still such sure than that the their theirs them then there these they thing " +
    "things this those though through thus to too toward under until up upon us use used uses using very via want " +
    "wants was way we well were what whatever when whenever where whether which while who whom whose why will with " +
    "within without would yes yet you your yours yourself"
  ).split(" ")
)

export const isStopword = (word: string) => STOPWORDS.has(word)

const stemCache = new Map<string, string>()
const STEM_CACHE_LIMIT = 200_000

/** Light English suffix stripping (a subset of Porter's step 1 and a few derivational endings); memoized. */
export const stem = (word: string): string => {
  const cached = stemCache.get(word)
  if (cached !== undefined) return cached
  const stemmed = stemUncached(word)
  if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear()
  stemCache.set(word, stemmed)
  return stemmed
}

const stemUncached = (word: string): string => {
  let w = word
  if (w.length <= 3 || /\d/.test(w)) return w
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`
  else if (w.endsWith("sses")) w = w.slice(0, -2)
  else if (w.endsWith("s") && !w.endsWith("ss") && !w.endsWith("us") && !w.endsWith("is")) w = w.slice(0, -1)
  for (const suffix of ["ations", "ation", "ings", "ing", "edly", "ed", "ers", "er", "ly", "ment", "ments"]) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 4) {
      w = w.slice(0, -suffix.length)
      break
    }
  }
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1)
  if (w.length > 4 && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(ll|ss|zz)$/.test(w)) w = w.slice(0, -1)
  return w
}

const WORD = /[\p{L}\p{N}_]+(?:[.-][\p{L}\p{N}_]+)*/gu

/** The parts of an identifier: camelCase, snake_case, dotted and dashed names split. */
/** One part: lower-case, or capitalised, or all capitals (the common cases, no regex replace needed). */
const SIMPLE = /^(?:[a-z0-9]+|[A-Z][a-z0-9]*|[A-Z0-9]+)$/
const ASCII_WORD = /[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*/g
const NON_ASCII = /[^\t\n\r\x20-\x7e]/

const parts = (token: string) =>
  SIMPLE.test(token)
    ? [token]
    : token
        .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2")
        .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
        .split(/[\s_.-]+/u)
        .filter((p) => p.length > 0)

/** The words of one token: itself lower-case, its parts, and the shorter runs of a dotted or dashed chain. */
const tokenWords = (token: string, out: Array<string>) => {
  const split = parts(token)
  if (split.length > 1) {
    const lower = token.toLowerCase()
    out.push(lower)
    // A dotted or dashed chain also holds its shorter runs: "instance.defaults.headers" holds
    // "instance.defaults", "4.20.0" holds "4.20", so a question may name any of them.
    const links = lower.split(/(?<=[.-])|(?=[.-])/u)
    if (links.length > 3 && links.length <= 11) {
      for (let from = 0; from < links.length; from += 2) {
        for (let to = from + 3; to <= links.length; to += 2) {
          if (from === 0 && to === links.length) continue
          out.push(links.slice(from, to).join(""))
        }
      }
    }
  }
  for (const part of split) out.push(part.toLowerCase())
}

// ASCII text (most of it) skips normalisation and the Unicode property classes, which cost more.
const tokensOf = (text: string) =>
  (NON_ASCII.test(text) ? text.normalize("NFKC").match(WORD) : text.match(ASCII_WORD)) ?? []

/** Every word of a text, lower-case, identifiers split into their parts too (not stemmed). */
export const words = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const token of tokensOf(text)) tokenWords(token, out)
  return out
}

/** The distinct stems of a text, for document frequencies (each distinct token analysed once). */
export const stems = (text: string): Set<string> => {
  const out = new Set<string>()
  const buffer: Array<string> = []
  for (const token of new Set(tokensOf(text))) {
    buffer.length = 0
    tokenWords(token, buffer)
    for (const word of buffer) if (!isStopword(word)) out.add(stem(word))
  }
  return out
}

/**
 * Document frequencies over many texts: for each stem, how many texts hold it (counted in or out), with
 * exactly the stems `stems` finds. An ingest counts every chunk: taking each chunk's `stems` cost more than all
 * of its SQL (14 of 25 CPU seconds at 104k chunks). Here a token's stems are worked out once per counter, not
 * once per text that holds it (`analysed` says how many tokens were), and a text marks the stems it has seen
 * by number instead of building a set of strings. Same stems because a token is its own only token: a token
 * tokenised again (NFKC is idempotent) gives itself, so `stems(token)` is that token's part of `stems(text)`.
 */
export const frequencyCounter = () => {
  const stemIds = new Map<string, number>()
  const stemNames: Array<string> = []
  const counts: Array<number> = []
  /** The number of the last text that counted each stem: a stem is counted once per text. */
  const lastText: Array<number> = []
  const tokenStems = new Map<string, ReadonlyArray<number>>()
  let texts = 0
  let analysed = 0
  const analyse = (token: string) => {
    analysed++
    const ids: Array<number> = []
    for (const s of stems(token)) {
      let id = stemIds.get(s)
      if (id === undefined) {
        id = stemNames.length
        stemIds.set(s, id)
        stemNames.push(s)
        counts.push(0)
        lastText.push(-1)
      }
      ids.push(id)
    }
    tokenStems.set(token, ids)
    return ids
  }
  return {
    /** Counts the stems of `text` in (`by` 1) or out (-1). */
    add: (text: string, by: 1 | -1) => {
      const textNumber = texts++
      for (const token of tokensOf(text)) {
        const ids = tokenStems.get(token) ?? analyse(token)
        for (const id of ids) {
          if (lastText[id] === textNumber) continue
          lastText[id] = textNumber
          counts[id]! += by
        }
      }
    },
    /** Each stem whose count moved, and by how much. */
    changes: (): Array<{ readonly stem: string; readonly df: number }> =>
      stemNames.flatMap((stem, id) => (counts[id] === 0 ? [] : [{ stem, df: counts[id]! }])),
    /** How many distinct tokens were analysed: once each, however many texts hold them. */
    analysed: () => analysed
  }
}

export type FrequencyCounter = ReturnType<typeof frequencyCounter>

/** A question's stems in order, stopwords and one-letter words out, a stem repeated at once kept once. */
export const stemSequence = (question: string) => {
  const out: Array<string> = []
  for (const word of words(question)) {
    if (isStopword(word) || word.length < 2) continue
    const s = stem(word)
    if (out[out.length - 1] !== s) out.push(s)
  }
  return out
}

/** A question's search terms: its distinct stems. */
export const queryTerms = (question: string): Array<string> => [...new Set(stemSequence(question))]

/**
 * Salient terms: what a question names rather than describes — identifiers (camelCase, snake_case,
 * dotted, `--flags`), versions and numbers, quoted or code-marked words, and capitalised words that do
 * not start a sentence. An answer that never mentions them is not about the question.
 */
export const salientTerms = (question: string): Array<string> => {
  const text = question.normalize("NFKC")
  const found = new Set<string>()
  const add = (raw: string) => {
    const word = raw.toLowerCase()
    if (word.length >= 2 && !isStopword(word)) found.add(word)
  }
  // Quoted or code-marked words; an apostrophe inside a word ("that's", "I've") is not a quote.
  for (const m of text.matchAll(/(?:^|[\s(])[`"']([^`"'\n]{2,60})[`"'](?=$|[\s.,;:!?)])/g))
    for (const token of (m[1] ?? "").match(WORD) ?? []) add(token)
  // Flags stand alone ("--cache", "-j"); "pretty-printed" or "third-party" is not one.
  for (const m of text.matchAll(/(?:^|[\s(`])(--?[a-z][a-z0-9-]*)/gi)) add((m[1] ?? "").replace(/^-+/, ""))
  const tokens = [...text.matchAll(/[\p{L}\p{N}_]+(?:[.-][\p{L}\p{N}_]+)*/gu)]
  tokens.forEach((m, i) => {
    const token = m[0]
    const before = text.slice(0, m.index).trimEnd()
    const sentenceStart = i === 0 || /[.?!:]$/.test(before)
    if (/\d/.test(token)) add(token)
    else if (/[a-z][A-Z]|_/.test(token) || /\w\w\.\w\w/.test(token)) add(token)
    else if (/^\p{Lu}/u.test(token) && !sentenceStart && token.length > 1 && !token.includes("-")) add(token)
    else if (/^\p{Lu}{2,}$/u.test(token)) add(token)
  })
  return [...found]
}
