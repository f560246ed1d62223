import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/** The dashboard's path prefix (docs/dashboard.md). */
export const UI_PATH = "/ui"

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json"
}

/**
 * Where `npm run build` wrote the dashboard (`dist/ui`): found from this module upwards, so the same lookup serves
 * the bundled `ctl` (dist/ctl/…), the compiled package (dist/src/…) and the sources under test (src/http/ui).
 */
export const builtUiDir = (): string | undefined => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 6; up++) {
    const candidate = path.join(dir, "dist", "ui")
    if (fs.existsSync(path.join(candidate, "index.html"))) return candidate
    if (path.basename(dir) === "dist" && fs.existsSync(path.join(dir, "ui", "index.html"))) return path.join(dir, "ui")
    dir = path.dirname(dir)
  }
  return undefined
}

/** The built files, read once: a handful of small files, served from memory with their content hash as ETag. */
const loadFiles = (dir: string) => {
  const files = new Map<string, { body: Uint8Array; type: string; immutable: boolean }>()
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const relative = path.posix.join(sub, entry.name)
      if (entry.isDirectory()) walk(relative)
      else
        files.set(relative, {
          body: fs.readFileSync(path.join(dir, relative)),
          type: TYPES[path.extname(entry.name)] ?? "application/octet-stream",
          // Assets carry their content hash in their name (scripts/bundle-ui.mjs): cached for a year.
          immutable: relative.startsWith("assets/")
        })
    }
  }
  walk("")
  return files
}

const notBuilt = HttpServerResponse.text(
  "The dashboard is not built: run `npm run build` (it writes dist/ui), then restart `ctl serve`.\n",
  { status: 503, headers: { "cache-control": "no-store" } }
)

/**
 * `GET /ui` and everything under it (docs/dashboard.md): the built single-page app. A path that names a built file
 * is that file; any other path under /ui is the app's page (it routes in the browser), so a reload or a shared link
 * to a page works. The app reaches the API surfaces of the same origin through the typed clients.
 */
export const UiRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function* () {
    const dir = builtUiDir()
    const files = dir === undefined ? undefined : loadFiles(dir)
    const serve = Effect.gen(function* () {
      if (files === undefined) return notBuilt
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = new URL(request.url, "http://ui").pathname
      const relative = pathname.slice(UI_PATH.length).replace(/^\/+/, "")
      const file = files.get(relative) ?? (relative.startsWith("assets/") ? undefined : files.get("index.html"))
      if (file === undefined) return HttpServerResponse.text("not found\n", { status: 404 })
      return HttpServerResponse.uint8Array(file.body, {
        contentType: file.type,
        headers: {
          "cache-control": file.immutable ? "public, max-age=31536000, immutable" : "no-cache",
          "x-content-type-options": "nosniff",
          ...(file.type.startsWith("text/html")
            ? {
                // The app loads its own script and style only and talks to this origin only.
                "content-security-policy":
                  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
              }
            : {})
        }
      })
    })
    yield* router.add("GET", UI_PATH, serve)
    yield* router.add("GET", `${UI_PATH}/*`, serve)
  })
)
