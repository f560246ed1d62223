/**
 * Where a citation points: a web source's file at the cited commit with its line anchor (GitHub's and GitLab's
 * `{web_url}/blob/{commit}/{path}#L{line}-L{end_line}`), or, for a source that is a local checkout (the demo's, which
 * has no web page), no link and the `git show` that prints those lines.
 */
export interface Cited {
  readonly repo: string
  readonly path: string
  readonly commit: string
  readonly line: number
  readonly end_line: number
}

const webUrl = (url: string | undefined) =>
  url !== undefined && /^https?:\/\//.test(url) ? url.replace(/\.git$/, "").replace(/\/+$/, "") : undefined

export const citationHref = (cited: Cited, sourceUrl: string | undefined): string | undefined => {
  const web = webUrl(sourceUrl)
  if (web === undefined) return undefined
  const path = cited.path.split("/").map(encodeURIComponent).join("/")
  const anchor = cited.end_line > cited.line ? `#L${cited.line}-L${cited.end_line}` : `#L${cited.line}`
  return `${web}/blob/${cited.commit}/${path}${anchor}`
}

export const gitShow = (cited: Cited, sourceUrl: string | undefined) =>
  `git -C ${sourceUrl ?? cited.repo} show ${cited.commit}:${cited.path} | sed -n '${cited.line},${cited.end_line}p'`

export const lineRange = (cited: Cited) =>
  cited.end_line > cited.line ? `lines ${cited.line}–${cited.end_line}` : `line ${cited.line}`
