// keel.mjs under the V8 CPU profiler (in-process, since --cpu-prof is refused in NODE_OPTIONS): the
// profile is written to BENCH_PROFILE_DIR when the server exits.
import * as fs from "node:fs"
import { Session } from "node:inspector"
import * as path from "node:path"

const session = new Session()
session.connect()
session.post("Profiler.enable")
session.post("Profiler.setSamplingInterval", { interval: 100 })
session.post("Profiler.start")
process.on("exit", () => {
  // A session on the main thread answers synchronously, so this still runs before the process ends.
  session.post("Profiler.stop", (error, result) => {
    if (error) return
    const dir = process.env.BENCH_PROFILE_DIR
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, `keel-${process.pid}.cpuprofile`), JSON.stringify(result.profile))
  })
})
await import("./keel.mjs")
