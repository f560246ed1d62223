import * as path from "node:path"
import { Either, Schema } from "effect"
import MarkdownIt from "markdown-it"
import * as YAML from "yaml"
import { hasControlCharacter } from "../../contracts/shared/Text.js"
import { sha256Hex } from "../platform/Digest.js"
import { formatIssues } from "../platform/Validation.js"
import { isCalendarTime } from "./EventTime.js"

/**
 * Markdown with HTML disabled: raw HTML in a post is shown as text, and markdown-it's link
 * validation refuses javascript:, vbscript:, file: and non-image data: URLs. The rendered HTML is
 * therefore safe to embed without a second sanitizer.
 */
const markdown = new MarkdownIt({ html: false, linkify: true, typographer: true })

const Slug = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]{0,127}$/))
/** What a front-matter date must be, the one reason given for any date that cannot be read (docs/blog.md). */
const DATE_RULE = "expected an ISO 8601 date or date-time as text, such as 2026-11-10 or 2026-11-10T09:00:00Z"
/**
 * A date-time without a zone (`2026-11-01 10:00`, `2026-11-01T10:00:00`) is UTC — Hugo's default — never the
 * server's zone, so the same file schedules a post at the same instant on every host; a date alone is its UTC
 * midnight (as JavaScript reads it).
 */
const zoned = (text: string) =>
  /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text.trim()) ? `${text.trim().replace(" ", "T")}Z` : text
/**
 * An ISO 8601 date or date-time as RFC 3339 writes it (a space for `T`, the seconds and the zone optional), with
 * its calendar fields. Nothing else is a date: the JavaScript parser would also read `2026`, `Nov 10 2026` or
 * `11/10/2026 09:00` — the last in the server's own zone.
 */
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/
/** `2026-02-30` or `T25:00` would be rolled over into another day by the date parser: refused instead. */
const dateTimeProblem = (text: string): string | undefined => {
  const match = ISO_DATE_TIME.exec(text.trim())
  if (match === null) return DATE_RULE
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => (part === undefined ? 0 : Number(part)))
  return isCalendarTime(year!, month!, day!, hour, minute, second)
    ? undefined
    : "expected a date that exists on the calendar"
}
/**
 * YAML 1.2 (what the front matter is read as) has no date type: a date is text, and anything else — `2026`, a
 * number of milliseconds, `true`, a list — is refused with the rule, not with the decoder's type names.
 */
const DateTimeText = Schema.transform(
  Schema.String.annotations({ message: () => DATE_RULE }).pipe(Schema.filter((text) => dateTimeProblem(text) ?? true)),
  Schema.String,
  { strict: true, decode: zoned, encode: (t) => t }
)
const DateTime = Schema.compose(DateTimeText, Schema.DateFromString).pipe(
  Schema.filter((d) => !Number.isNaN(d.getTime()) || DATE_RULE)
)

export const FrontMatter = Schema.Struct({
  title: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(300)),
  slug: Schema.optional(Slug),
  surface: Schema.optional(Slug),
  status: Schema.optionalWith(Schema.Literal("published", "draft"), { default: () => "draft" as const }),
  published_at: Schema.optional(DateTime),
  updated_at: Schema.optional(DateTime),
  excerpt: Schema.optional(Schema.String.pipe(Schema.maxLength(1000))),
  cover_image: Schema.optional(
    Schema.String.pipe(
      Schema.maxLength(2048),
      // Pages put it in <img src> and og:image: a path or an http(s) URL, never javascript:, data: and the like.
      Schema.filter((url) =>
        (/^[a-z][a-z0-9+.-]*:/i.test(url) ? /^https?:\/\//i.test(url) : true) &&
        !/\s/.test(url) &&
        !hasControlCharacter(url)
          ? true
          : "expected a path (/images/cover.png) or an http(s) URL"
      )
    )
  ),
  tags: Schema.optionalWith(Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))), {
    default: () => []
  })
})

export interface BlogPostSource {
  readonly surface: string
  readonly slug: string
  readonly title: string
  readonly excerpt: string
  readonly coverImage: string | null
  readonly tags: ReadonlyArray<string>
  readonly status: "published" | "draft"
  readonly publishedAt: number | null
  readonly updatedAt: number | null
  readonly readingTimeMinutes: number
  readonly html: string
  readonly digest: string
  readonly file: string
}

const WORDS_PER_MINUTE = 200

/**
 * The entities markdown-it writes, as the characters they stand for; any other named entity a space. `<` and `>`
 * stay out of the text (a space): a page that puts an excerpt into HTML unescaped must not get markup from it.
 */
const entity = (name: string) => {
  const named: Record<string, string> = { amp: "&", lt: " ", gt: " ", quot: '"', "#39": "'", "#x27": "'" }
  const known = named[name.toLowerCase()]
  if (known !== undefined) return known
  const code = /^#x([0-9a-f]+)$/i.exec(name)?.[1]
  const point = code !== undefined ? Number.parseInt(code, 16) : /^#(\d+)$/.exec(name) ? Number(name.slice(1)) : NaN
  return Number.isInteger(point) &&
    point > 0 &&
    point <= 0x10ffff &&
    (point < 0xd800 || point > 0xdfff) &&
    point !== 0x3c &&
    point !== 0x3e
    ? String.fromCodePoint(point)
    : " "
}

const plainText = (html: string) =>
  html
    .replace(/<\/?(p|h[1-6]|li|ul|ol|blockquote|pre|br|hr|div|table|tr|td|th)\b[^>]*>/gi, " ")
    .replace(/<[^>]*>/g, "")
    .replace(/&(amp|lt|gt|quot|#39|#x27|#\d+|#x[0-9a-f]+|[a-z0-9]+);/gi, (_, name: string) => entity(name))
    .replace(/\s+/g, " ")
    .trim()

/** The first paragraph, as text, cut at a word boundary near 200 characters. */
const excerptOf = (html: string) => {
  const first = /<p>([\s\S]*?)<\/p>/.exec(html)?.[1] ?? html
  const text = plainText(first)
  if (text.length <= 200) return text
  const cut = text.slice(0, 200)
  return `${cut.slice(0, Math.max(cut.lastIndexOf(" "), 150))}…`
}

const splitFrontMatter = (text: string) => {
  // A byte-order mark (editors on Windows write one) is not content.
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text)
  return match ? { front: match[1] ?? "", body: match[2] ?? "" } : undefined
}

/**
 * Parses one Markdown file with YAML front matter. `surface` defaults to the file's directory
 * under the import root (or "blog" at the root), `slug` to the file name.
 */
export const parsePost = (file: string, root: string, text: string): Either.Either<BlogPostSource, string> => {
  const parts = splitFrontMatter(text)
  if (parts === undefined) return Either.left("no front matter (the file must start with a --- block)")
  let raw: unknown
  try {
    raw = YAML.parse(parts.front) ?? {}
  } catch (error) {
    return Either.left(`front matter is not valid YAML: ${(error as Error).message.split("\n")[0]}`)
  }
  const decoded = Schema.decodeUnknownEither(FrontMatter, { errors: "all", onExcessProperty: "error" })(raw)
  if (Either.isLeft(decoded)) {
    return Either.left(formatIssues(decoded.left, { root: "(front matter)" }))
  }
  const front = decoded.right
  const relative = path.relative(root, file)
  const directory = path.dirname(relative)
  // Defaults from the path are lower-cased alike (`News/Hello.md` is surface `news`, slug `hello`).
  const surface = front.surface ?? (directory === "." ? "blog" : (directory.split(path.sep)[0] ?? "blog").toLowerCase())
  const slug = front.slug ?? path.basename(file, path.extname(file)).toLowerCase()
  if (!/^[a-z0-9][a-z0-9-]{0,127}$/.test(slug))
    return Either.left(`slug "${slug}" must be lower-case letters, digits and -`)
  if (!/^[a-z0-9][a-z0-9-]{0,127}$/.test(surface))
    return Either.left(`surface "${surface}" must be lower-case letters, digits and -`)
  if (front.status === "published" && front.published_at === undefined) {
    return Either.left("published_at: a published post needs its publication date-time")
  }
  const html = markdown.render(parts.body)
  const words = plainText(html)
    .split(" ")
    .filter((w) => w.length > 0).length
  return Either.right({
    surface,
    slug,
    title: front.title,
    excerpt: front.excerpt ?? excerptOf(html),
    coverImage: front.cover_image ?? null,
    tags: front.tags,
    status: front.status,
    publishedAt: front.published_at?.getTime() ?? null,
    updatedAt: front.updated_at?.getTime() ?? null,
    readingTimeMinutes: Math.max(1, Math.ceil(words / WORDS_PER_MINUTE)),
    html,
    digest: sha256Hex(text),
    file: relative
  })
}
