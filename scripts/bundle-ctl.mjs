// Builds the `ctl` binary as an esbuild bundle (npm run build): a few files for Node to load instead of ~1,350
// ES modules. Splitting keeps each command group's implementation in chunks loaded only when that command runs.
// usage: node scripts/bundle-ctl.mjs   (from the package root; writes dist/ctl/)
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const outdir = path.join(root, "dist", "ctl")

// Native addons and packages that find files beside themselves at run time stay in node_modules.
const external = ["better-sqlite3", "usearch", "msgpackr-extract", "@parcel/watcher"]

// ESM output has no `require`; bundled CommonJS packages (simple-git, yaml, undici, …) call it for Node's
// built-ins, so every chunk gets one made for its own location.
const banner = [
  'import { createRequire as __keelCreateRequire } from "node:module";',
  "const require = __keelCreateRequire(import.meta.url);"
].join(" ")

fs.rmSync(outdir, { recursive: true, force: true })
const result = await build({
  absWorkingDir: root,
  entryPoints: { main: "src/cli/main.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external,
  banner: { js: banner },
  // Stack traces name src/ files when Node is run with --enable-source-maps.
  sourcemap: "linked",
  sourcesContent: false,
  // Less text for Node to read and parse at start-up; identifiers are not renamed, so a stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  chunkNames: "chunks/[name]-[hash]",
  logLevel: "warning",
  metafile: true
})
// What each file of the bundle holds, for measuring what start-up loads (bench/startup.mjs).
fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile))
