import * as fs from "node:fs/promises"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Schema } from "effect"
import { BlogList, BlogPost, BlogPostSummary, PostNotFound } from "../../contracts/product/Blog.js"
import { orDieSql } from "../platform/SqlEdge.js"
import { type BlogPostSource, parsePost } from "./BlogSource.js"

export interface ImportReport {
  readonly created: ReadonlyArray<string>
  readonly updated: ReadonlyArray<string>
  readonly unchanged: number
  readonly failed: ReadonlyArray<{ readonly file: string; readonly reason: string }>
}

interface PostRow {
  readonly slug: string
  readonly title: string
  readonly excerpt: string
  readonly cover_image: string | null
  readonly tags: string
  readonly published_at: number
  readonly updated_at: number
  readonly reading_time_minutes: number
  readonly html?: string
}

const summaryOf = (row: PostRow) => ({
  slug: row.slug,
  title: row.title,
  excerpt: row.excerpt,
  cover_image: row.cover_image,
  tags: JSON.parse(row.tags) as Array<string>,
  published_at: new Date(Number(row.published_at)).toISOString(),
  updated_at: new Date(Number(row.updated_at)).toISOString(),
  reading_time_minutes: Number(row.reading_time_minutes)
})

export const DEFAULT_LIMIT = 15
export const MAX_LIMIT = 50

const markdownFiles = async (dir: string): Promise<Array<string>> => {
  const entries = await fs.readdir(dir, { withFileTypes: true })
  const nested = await Promise.all(
    entries
      .filter((e) => !e.name.startsWith("."))
      .map(async (e) => {
        const full = path.join(dir, e.name)
        if (e.isDirectory()) return markdownFiles(full)
        return e.isFile() && /\.(md|markdown)$/i.test(e.name) ? [full] : []
      })
  )
  return nested.flat().sort()
}

/** The public blog: posts imported from Markdown files, read only when published and due. */
export class Blog extends Effect.Service<Blog>()("product/Blog", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const upsert = (post: BlogPostSource, now: number) =>
      sql`INSERT INTO blog_posts ${sql.insert({
        surface: post.surface,
        slug: post.slug,
        title: post.title,
        excerpt: post.excerpt,
        cover_image: post.coverImage,
        tags: JSON.stringify(post.tags),
        status: post.status,
        published_at: post.publishedAt,
        updated_at: post.updatedAt ?? post.publishedAt ?? now,
        reading_time_minutes: post.readingTimeMinutes,
        html: post.html,
        source_digest: post.digest,
        source_file: post.file
      })}
      ON CONFLICT (surface, slug) DO UPDATE SET
        title = excluded.title, excerpt = excluded.excerpt, cover_image = excluded.cover_image,
        tags = excluded.tags, status = excluded.status, published_at = excluded.published_at,
        updated_at = excluded.updated_at, reading_time_minutes = excluded.reading_time_minutes,
        html = excluded.html, source_digest = excluded.source_digest, source_file = excluded.source_file`

    /**
     * Imports every Markdown file under `dir`. Idempotent: a post whose source is unchanged is not
     * rewritten; a file that fails to parse is reported and the others are imported. Two files
     * claiming the same surface/slug: the first (in path order) wins, the second is reported.
     */
    const importDirectory = Effect.fn("Blog.importDirectory")(function* (dir: string) {
      const root = path.resolve(dir)
      const files = yield* Effect.tryPromise({
        try: () => markdownFiles(root),
        catch: (error) => new PostImportFailed({ detail: `cannot read ${root}: ${(error as Error).message}` })
      })
      const now = yield* Clock.currentTimeMillis
      const created: Array<string> = []
      const updated: Array<string> = []
      const failed: Array<{ file: string; reason: string }> = []
      const seen = new Set<string>()
      let unchanged = 0
      for (const file of files) {
        const text = yield* Effect.promise(() => fs.readFile(file, "utf8"))
        const parsed = parsePost(file, root, text)
        const relative = path.relative(root, file)
        if (Either.isLeft(parsed)) {
          failed.push({ file: relative, reason: parsed.left })
          continue
        }
        const post = parsed.right
        const key = `${post.surface}/${post.slug}`
        if (seen.has(key)) {
          failed.push({ file: relative, reason: `${key} is already defined by another file` })
          continue
        }
        seen.add(key)
        const existing = yield* sql<{ source_digest: string }>`
          SELECT source_digest FROM blog_posts WHERE surface = ${post.surface} AND slug = ${post.slug}`
        if (existing[0]?.source_digest === post.digest) {
          unchanged++
          continue
        }
        yield* upsert(post, now)
        ;(existing.length === 0 ? created : updated).push(key)
      }
      return { created, updated, unchanged, failed } satisfies ImportReport
    }, orDieSql)

    const notFound = () => new PostNotFound({ detail: "no such published post" })

    const list = Effect.fn("Blog.list")(function* (surface: string, page: number, limit: number) {
      const now = yield* Clock.currentTimeMillis
      const size = Math.min(MAX_LIMIT, Math.max(1, Math.trunc(limit)))
      const totals = yield* sql<{ n: number }>`
        SELECT count(*) AS n FROM blog_posts
        WHERE surface = ${surface} AND status = 'published' AND published_at <= ${now}`
      const total = Number(totals[0]?.n ?? 0)
      // An unknown surface and one with nothing published yet are the same to a reader.
      if (total === 0) return yield* notFound()
      const pages = Math.ceil(total / size)
      const rows = yield* sql<PostRow>`
        SELECT slug, title, excerpt, cover_image, tags, published_at, updated_at, reading_time_minutes
        FROM blog_posts
        WHERE surface = ${surface} AND status = 'published' AND published_at <= ${now}
        ORDER BY published_at DESC, slug ASC
        LIMIT ${size} OFFSET ${(page - 1) * size}`
      return new BlogList({
        posts: rows.map((row) => new BlogPostSummary(summaryOf(row))),
        meta: {
          pagination: {
            page,
            limit: size,
            pages,
            total,
            next: page < pages ? page + 1 : null,
            prev: page > 1 ? Math.min(page - 1, pages) : null
          }
        }
      })
    }, orDieSql)

    const get = Effect.fn("Blog.get")(function* (surface: string, slug: string) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<PostRow & { html: string }>`
        SELECT slug, title, excerpt, cover_image, tags, published_at, updated_at, reading_time_minutes, html
        FROM blog_posts
        WHERE surface = ${surface} AND slug = ${slug} AND status = 'published' AND published_at <= ${now}`
      const row = rows[0]
      if (row === undefined) return yield* notFound()
      return new BlogPost({ post: { ...summaryOf(row), html: row.html } })
    }, orDieSql)

    return { importDirectory, list, get } as const
  })
}) {}

export class PostImportFailed extends Schema.TaggedError<PostImportFailed>()("PostImportFailed", {
  detail: Schema.String
}) {}
