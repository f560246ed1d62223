import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { setRuntime } from "../../src/services/fleet/agent/handoff/RuntimePointer.js"

const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)

/** The server runs under umask 077 (docs/security.md); the runtime's config file is read by the application. */
const underServerUmask = (body: (dir: string) => void) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-runtime-"))
  const umask = process.umask(0o077)
  try {
    body(dir)
  } finally {
    process.umask(umask)
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

describe("a handoff's runtime config file", () => {
  it("keeps the mode of the file it replaces, whatever the server's umask (the application may read it as another user)", () =>
    underServerUmask((dir) => {
      const file = path.join(dir, "storage-root.conf")
      fs.writeFileSync(file, "/srv/b\n")
      fs.chmodSync(file, 0o640)
      setRuntime({ kind: "config_file", path: file }, "/srv/a")
      assert.strictEqual(fs.readFileSync(file, "utf8"), "/srv/a\n")
      assert.strictEqual(modeOf(file), "640")
    }))

  it("is 0644 when there was none before, whatever the server's umask", () =>
    underServerUmask((dir) => {
      const file = path.join(dir, "storage-root.conf")
      setRuntime({ kind: "config_file", path: file }, "/srv/a")
      assert.strictEqual(fs.readFileSync(file, "utf8"), "/srv/a\n")
      assert.strictEqual(modeOf(file), "644")
    }))
})
