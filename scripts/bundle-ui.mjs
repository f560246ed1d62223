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

// effect's Schema reaches its Arbitrary module, and that fast-check (property testing, ~12 KB gzipped); the app never
// makes arbitraries, so the browser bundle gets an empty module in its place (a call would fail loudly, and
// test/ui covers every page).
const withoutPropertyTesting = {
  name: "without-property-testing",
  setup(build) {
    build.onResolve({ filter: /^(fast-check|pure-rand)(\/.*)?$/ }, (args) => ({ path: args.path, namespace: "empty" }))
    build.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {}", loader: "js" }))
  }
}

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
  plugins: [withoutPropertyTesting],
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
