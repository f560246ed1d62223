// Summarises a V8 .cpuprofile (from BENCH_PROFILE=DIR runs): self time per layer (the package or Keel
// folder a frame's script belongs to) and the top self-time frames. Usage:
//   node bench/profile-summary.mjs FILE.cpuprofile [--top N] [--from SECONDS]
// --from skips the samples of the first SECONDS of the profile (start-up: module compilation, migrations).
import * as fs from "node:fs"

const file = process.argv[2]
if (!file) {
  console.error("usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]")
  process.exit(2)
}
const topIndex = process.argv.indexOf("--top")
const TOP = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 30
const fromIndex = process.argv.indexOf("--from")
const FROM_MICROS = fromIndex > 0 ? Number(process.argv[fromIndex + 1]) * 1e6 : 0
const profile = JSON.parse(fs.readFileSync(file, "utf8"))

/** The layer a script belongs to: an npm package (scope/name), a Keel folder, node's own code, or V8. */
const layerOf = (url, name) => {
  if (!url) return name.startsWith("(") ? name : "(native)"
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:dist\/(?:esm|cjs|dts)\/)?([^/]+)?/)
  if (pkg) {
    const [, packageName, first] = pkg
    // effect's own runtime is one package of many concerns: split its internals by file.
    if (packageName === "effect" && first === "internal") {
      const inner = url.match(/internal\/(.+?)\.js/)
      return `effect/internal/${inner?.[1] ?? "?"}`
    }
    if (packageName === "effect") return `effect/${(first ?? "").replace(/\.js$/, "")}`
    if (packageName.startsWith("@effect/")) return `${packageName}/${first ?? ""}`.replace(/\.js$/, "")
    return packageName
  }
  const keel = url.match(/\/dist\/src\/(.+?)\.js/)
  if (keel) return `keel/${keel[1]}`
  if (url.startsWith("node:")) return url
  return url
}

const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const selfSamples = new Map()
let elapsed = 0
let total = 0
for (const [i, id] of profile.samples.entries()) {
  elapsed += profile.timeDeltas?.[i] ?? 0
  if (elapsed < FROM_MICROS) continue
  total++
  selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1)
}
const idle = new Set(["(idle)", "(program)"])

const layers = new Map()
const frames = new Map()
let busy = 0
for (const [id, count] of selfSamples) {
  const node = byId.get(id)
  const { functionName, url, lineNumber } = node.callFrame
  const name = functionName || "(anonymous)"
  if (idle.has(name)) continue
  busy += count
  const layer = layerOf(url, name)
  layers.set(layer, (layers.get(layer) ?? 0) + count)
  const key = `${name} ${layer}:${lineNumber + 1}`
  frames.set(key, (frames.get(key) ?? 0) + count)
}

const pct = (n, of) => `${((100 * n) / of).toFixed(1).padStart(5)} %`
console.log(`${file}: ${total} samples, busy ${pct(busy, total)}`)
console.log("self time by layer (share of busy time)")
for (const [layer, n] of [...layers].sort((a, b) => b[1] - a[1]).slice(0, TOP))
  console.log(`  ${pct(n, busy)}  ${layer}`)
console.log("top frames by self time (share of busy time)")
for (const [frame, n] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, TOP))
  console.log(`  ${pct(n, busy)}  ${frame}`)
