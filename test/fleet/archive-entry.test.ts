import { execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import { ArchiveRefused, extractEntry } from "../support/keel.js"

// The streaming tar reader binary recovery uses: one entry of a real .tar.gz (GNU, pax and ustar archives made by
// tar itself), copied and hashed without holding the archive; links and non-archives refused.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-archive-"))
const deep = `${"long-directory-name/".repeat(8)}bin/ctl`
const payload = crypto.randomBytes(70_000)
fs.mkdirSync(path.join(dir, "src", path.dirname(deep)), { recursive: true })
fs.writeFileSync(path.join(dir, "src", deep), payload, { mode: 0o755 })
fs.writeFileSync(path.join(dir, "src", "small.txt"), "hello")
fs.symlinkSync("small.txt", path.join(dir, "src", "link"))

const archive = (format: string) => {
  const file = path.join(dir, `${format}.tar.gz`)
  execFileSync("tar", [`--format=${format}`, "-czf", file, "-C", path.join(dir, "src"), "."])
  return file
}
const read = (file: string) => fs.createReadStream(file) as AsyncIterable<Uint8Array>

describe("extractEntry", () => {
  for (const format of ["gnu", "pax"])
    it(`finds a ${deep.length}-character path in a ${format} archive, byte for byte`, async () => {
      const out = path.join(dir, `${format}.out`)
      const entry = await extractEntry(read(archive(format)), `./${deep}`, out)
      assert.deepStrictEqual(entry, {
        sha256: crypto.createHash("sha256").update(payload).digest("hex"),
        size: payload.length,
        mode: 0o755
      })
      assert.isTrue(fs.readFileSync(out).equals(payload))
      assert.strictEqual(fs.statSync(out).mode & 0o777, 0o600)
    })

  it("answers null for a missing entry, refuses a link and a file that is no .tar.gz", async () => {
    const file = archive("ustar")
    assert.isNull(await extractEntry(read(file), "nope", path.join(dir, "none.out")))
    assert.isFalse(fs.existsSync(path.join(dir, "none.out")))
    await extractEntry(read(file), "link", path.join(dir, "link.out")).then(
      () => assert.fail("a link was extracted"),
      (error) => {
        assert.instanceOf(error, ArchiveRefused)
        assert.match((error as Error).message, /not a regular file/)
      }
    )
    fs.writeFileSync(path.join(dir, "plain.tar.gz"), "not gzip at all")
    await extractEntry(read(path.join(dir, "plain.tar.gz")), "x", path.join(dir, "plain.out")).then(
      () => assert.fail("accepted"),
      (error) => assert.match((error as Error).message, /not a readable \.tar\.gz/)
    )
    assert.isFalse(fs.existsSync(path.join(dir, "plain.out")))
  })
})
