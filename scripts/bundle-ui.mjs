// Builds the web dashboard (npm run build): src/ui/main.tsx bundled by esbuild for the browser into dist/ui/assets,
// names carrying their content hash (served immutable), and dist/ui/index.html naming them. Prints the sizes.
// usage: node scripts/bundle-ui.mjs   (from the package root)
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { build } from "esbuild"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const outdir = path.join(root, "dist", "ui")

fs.rmSync(outdir, { recursive: true, force: true })
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: "src/ui/main.tsx" },
  outdir: path.join(outdir, "assets"),
  entryNames: "[name]-[hash]",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  sourcemap: "linked",
  metafile: true,
  legalComments: "none",
  logLevel: "warning"
})
const outputs = Object.keys(result.metafile.outputs).map((file) => path.relative(path.join(outdir, "assets"), file))
const js = outputs.find((file) => file.endsWith(".js"))
const css = outputs.find((file) => file.endsWith(".css"))
if (js === undefined || css === undefined) throw new Error(`bundle-ui: expected one .js and one .css, got ${outputs}`)
const template = fs.readFileSync(path.join(root, "src", "ui", "index.html"), "utf8")
fs.writeFileSync(path.join(outdir, "index.html"), template.replace("%JS%", js).replace("%CSS%", css))
const gz = (file) => gzipSync(fs.readFileSync(path.join(outdir, "assets", file))).length
console.log(
  `bundle-ui: dist/ui/assets/${js} ${(gz(js) / 1024).toFixed(1)} KB gzipped, ${css} ${(gz(css) / 1024).toFixed(1)} KB`
)
