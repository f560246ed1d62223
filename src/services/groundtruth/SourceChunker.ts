/**
 * Source files of recognisable languages cut at their top-level declarations, each with the doc comment
 * (and decorators) directly above it. Declarations of a few lines are joined with their neighbours, so
 * a file of one-line exports is not a hundred chunks. Other files are windows.
 */

interface Language {
  /** A top-level declaration starts on this line; group 1 is its name. */
  readonly declaration: RegExp
  /** Lines that belong to the declaration below them (comments, decorators, attributes). */
  readonly leading: RegExp
}

const JS: Language = {
  declaration:
    /^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:async\s+)?(?:function\*?|class|interface|type|enum|namespace|module|abstract\s+class|const|let|var)\s+([A-Za-z_$][\w$]*)|^(?:module\.exports|exports)(?:\.([\w$]+))?\s*=|^([A-Za-z_$][\w$]*(?:\.[\w$]+)+)\s*=/,
  leading: /^\s*(\/\*\*?|\*|\*\/|\/\/|@\w)/
}

const LANGUAGES: ReadonlyArray<readonly [RegExp, Language]> = [
  [/\.(m|c)?(j|t)sx?$/i, JS],
  [
    /\.py$/i,
    { declaration: /^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^([A-Z_][A-Z0-9_]*)\s*=/, leading: /^\s*(#|@)/ }
  ],
  [
    /\.go$/i,
    {
      declaration: /^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)|^type\s+([A-Za-z_]\w*)|^(?:var|const)\s+([A-Za-z_]\w*)/,
      leading: /^\s*\/\//
    }
  ],
  [
    /\.rs$/i,
    {
      declaration:
        /^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+)*(?:fn|struct|enum|trait|type|mod|const|static|macro_rules!)\s+([A-Za-z_]\w*)|^impl\b[^{]*?\s([A-Za-z_]\w*)\s*(?:<[^{]*>)?\s*\{/,
      leading: /^\s*(\/\/|#\[|\/\*|\*)/
    }
  ]
]

export const sourceLanguage = (file: string) => LANGUAGES.find(([pattern]) => pattern.test(file))?.[1]

export interface Declaration {
  readonly name: string
  /** [start, end) 0-based, doc comment included. */
  readonly start: number
  readonly end: number
}

/** The file's top-level declarations in order, covering it from the first to the end. */
export const declarations = (lines: ReadonlyArray<string>, language: Language): Array<Declaration> => {
  const starts: Array<{ line: number; name: string }> = []
  lines.forEach((line, i) => {
    const match = language.declaration.exec(line)
    if (match === null) return
    const name = match.slice(1).find((g) => g !== undefined) ?? line.trim().slice(0, 40)
    starts.push({ line: i, name })
  })
  const out: Array<Declaration> = []
  starts.forEach((s, j) => {
    let start = s.line
    const floor = j === 0 ? 0 : starts[j - 1]!.line + 1
    while (start - 1 >= floor && language.leading.test(lines[start - 1] ?? "")) start--
    out.push({ name: s.name, start, end: lines.length })
    if (j > 0) {
      const previous = out[j - 1]!
      out[j - 1] = { ...previous, end: start }
    }
  })
  return out
}
