import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import {
  applyUnion,
  checkpoint,
  diffManifests,
  manifestOf,
  manifestsEqual,
  planUnion,
  rollbackUnion,
  type TreeManifest,
  type Winner
} from "../support/keel.js"

// Issue 18, the data half of the handoff: the additive union of B into A for either winner, the checkpoint
// that makes it reversible, and a rollback that restores A's manifest exactly — shared, A-only and B-only paths,
// nested and empty directories, symlinks, modes, and kind conflicts.

const write = (root: string, relative: string, text: string, mode = 0o644) => {
  const file = path.join(root, relative)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
  fs.chmodSync(file, mode)
}

/** Two roots with every kind of overlap. */
const fixture = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-handoff-trees-"))
  const a = path.join(dir, "a")
  const b = path.join(dir, "b")
  for (const root of [a, b]) fs.mkdirSync(root)
  // Shared, identical.
  write(a, "same.txt", "same")
  write(b, "same.txt", "same")
  // Shared, different bytes; different mode only.
  write(a, "objects/shared.bin", "from A")
  write(b, "objects/shared.bin", "from B, longer")
  write(a, "objects/mode.sh", "#!/bin/sh\n", 0o644)
  write(b, "objects/mode.sh", "#!/bin/sh\n", 0o755)
  // Only on one side, nested.
  write(a, "objects/a-only/deep/one.txt", "a1")
  write(b, "objects/b-only/deep/two.txt", "b2", 0o600)
  // Empty directories on each side.
  fs.mkdirSync(path.join(a, "empty-a/inner"), { recursive: true })
  fs.mkdirSync(path.join(b, "empty-b/inner"), { recursive: true })
  fs.chmodSync(path.join(b, "empty-b"), 0o700)
  // Symlinks: shared with different targets, B-only.
  fs.symlinkSync("same.txt", path.join(a, "link"))
  fs.symlinkSync("objects/shared.bin", path.join(b, "link"))
  fs.symlinkSync("../same.txt", path.join(b, "objects/b-link"))
  // Kind conflicts: A file vs B directory (with a child); A directory (with a child) vs B file.
  write(a, "kind/file-or-dir", "a file")
  write(b, "kind/file-or-dir/child.txt", "b child")
  write(a, "kind/dir-or-file/a-child.txt", "a child")
  write(b, "kind/dir-or-file", "b file")
  return { dir, a, b }
}

const read = (root: string, relative: string) => fs.readFileSync(path.join(root, relative), "utf8")
const modeOf = (root: string, relative: string) => fs.statSync(path.join(root, relative)).mode & 0o7777

const union = async (winner: Winner) => {
  const { dir, a, b } = fixture()
  const before = await manifestOf(a)
  const bBefore = await manifestOf(b)
  const plan = planUnion(before, bBefore, winner)
  const checkpointDir = path.join(dir, "checkpoint")
  await checkpoint(a, plan, checkpointDir)
  await applyUnion(a, b, plan)
  const after = await manifestOf(a)
  assert.deepStrictEqual(diffManifests(plan.expected, after), { missing: [], unexpected: [], changed: [] })
  assert.isTrue(manifestsEqual(await manifestOf(b), bBefore), "B is only read")
  return { dir, a, b, before, plan, checkpointDir, after }
}

describe("the union when A serves", () => {
  it("imports only B-only entries; A keeps every shared path; conflicts under A's files are reported", async () => {
    const { a, plan } = await union("a")
    assert.strictEqual(read(a, "objects/shared.bin"), "from A")
    assert.strictEqual(modeOf(a, "objects/mode.sh"), 0o644)
    assert.strictEqual(fs.readlinkSync(path.join(a, "link")), "same.txt")
    assert.strictEqual(read(a, "objects/b-only/deep/two.txt"), "b2")
    assert.strictEqual(modeOf(a, "objects/b-only/deep/two.txt"), 0o600)
    assert.strictEqual(fs.readlinkSync(path.join(a, "objects/b-link")), "../same.txt")
    assert.isTrue(fs.statSync(path.join(a, "empty-b/inner")).isDirectory())
    assert.strictEqual(modeOf(a, "empty-b"), 0o700)
    assert.isTrue(fs.statSync(path.join(a, "kind/file-or-dir")).isFile(), "A's file stays")
    assert.isTrue(fs.statSync(path.join(a, "kind/dir-or-file")).isDirectory(), "A's directory stays")
    assert.deepStrictEqual(
      plan.conflicts.map((c) => c.path),
      ["kind/file-or-dir", "kind/file-or-dir/child.txt"]
    )
    assert.includeMembers([...plan.retained], ["objects/b-only/deep/two.txt", "objects/b-link", "empty-b/inner"])
    assert.lengthOf(plan.replaces, 0)
  })
})

describe("the union when B serves", () => {
  it("B wins shared paths (bytes, mode, symlink target, a file becoming a directory); A-only entries remain", async () => {
    const { a, plan } = await union("b")
    assert.strictEqual(read(a, "objects/shared.bin"), "from B, longer")
    assert.strictEqual(modeOf(a, "objects/mode.sh"), 0o755)
    assert.strictEqual(fs.readlinkSync(path.join(a, "link")), "objects/shared.bin")
    assert.strictEqual(read(a, "objects/a-only/deep/one.txt"), "a1")
    assert.isTrue(fs.statSync(path.join(a, "empty-a/inner")).isDirectory())
    assert.strictEqual(read(a, "kind/file-or-dir/child.txt"), "b child", "B's directory replaced A's file")
    assert.strictEqual(read(a, "kind/dir-or-file/a-child.txt"), "a child", "A's directory keeps its A-only contents")
    assert.deepStrictEqual(
      plan.conflicts.map((c) => c.path),
      ["kind/dir-or-file"]
    )
    assert.includeMembers([...plan.retained], ["objects/a-only/deep/one.txt", "empty-a/inner"])
  })
})

describe("checkpoint and rollback", () => {
  for (const winner of ["a", "b"] as const)
    it(`restore A's checkpoint manifest exactly (winner ${winner}), and run again change nothing`, async () => {
      const { a, b, before, plan, checkpointDir } = await union(winner)
      // Applying again is a no-op.
      const once = await manifestOf(a)
      await applyUnion(a, b, plan)
      assert.isTrue(manifestsEqual(once, await manifestOf(a)))
      await rollbackUnion(a, plan, checkpointDir, before)
      assert.deepStrictEqual(diffManifests(before, await manifestOf(a)), { missing: [], unexpected: [], changed: [] })
      await rollbackUnion(a, plan, checkpointDir, before)
      assert.isTrue(manifestsEqual(before, await manifestOf(a)))
    })

  it("a union interrupted halfway is rolled back exactly too", async () => {
    const { dir, a, b } = fixture()
    const before = await manifestOf(a)
    const plan = planUnion(before, await manifestOf(b), "b")
    await checkpoint(a, plan, path.join(dir, "checkpoint"))
    const half: typeof plan = {
      ...plan,
      creates: plan.creates.slice(0, Math.ceil(plan.creates.length / 2)),
      replaces: plan.replaces.slice(0, 2)
    }
    await applyUnion(a, b, half)
    assert.isFalse(manifestsEqual(before, await manifestOf(a)))
    await rollbackUnion(a, plan, path.join(dir, "checkpoint"), before)
    assert.isTrue(manifestsEqual(before, await manifestOf(a)))
  })

  it("a run killed in the middle of a copy (its staged file left behind) is resumed, or rolled back, exactly", async () => {
    for (const finish of ["resume", "rollback"] as const) {
      const { dir, a, b } = fixture()
      // A file of A's own with a staged-looking name is data, never swept.
      write(a, "objects/notes.keel-handoff-7", "A's own")
      const before = await manifestOf(a)
      const plan = planUnion(before, await manifestOf(b), "b")
      await checkpoint(a, plan, path.join(dir, "checkpoint"))
      const half: typeof plan = { ...plan, creates: plan.creates.slice(0, Math.ceil(plan.creates.length / 2)) }
      await applyUnion(a, b, half)
      // What a process killed mid-copy leaves: a partial staged copy beside a created file and a replaced one.
      const created = plan.creates.find((entry) => entry.type === "file" && entry.path.includes("/"))!
      fs.mkdirSync(path.join(a, path.dirname(created.path)), { recursive: true })
      fs.writeFileSync(path.join(a, `${created.path}.keel-handoff-99999`), "partial")
      fs.writeFileSync(path.join(a, "objects/shared.bin.keel-handoff-99998"), "part")
      if (finish === "resume") {
        await applyUnion(a, b, plan)
        assert.deepStrictEqual(diffManifests(plan.expected, await manifestOf(a)), {
          missing: [],
          unexpected: [],
          changed: []
        })
      } else {
        await rollbackUnion(a, plan, path.join(dir, "checkpoint"), before)
        assert.isTrue(manifestsEqual(before, await manifestOf(a)))
      }
      assert.strictEqual(read(a, "objects/notes.keel-handoff-7"), "A's own")
    }
  })

  it("a file that changed after its checkpoint is refused, never saved wrong", async () => {
    const { dir, a, b } = fixture()
    const before: TreeManifest = await manifestOf(a)
    const plan = planUnion(before, await manifestOf(b), "b")
    write(a, "objects/shared.bin", "written after the preflight")
    let refused = ""
    await checkpoint(a, plan, path.join(dir, "checkpoint")).catch((error: Error) => {
      refused = error.message
    })
    assert.match(refused, /objects\/shared\.bin changed while it was checkpointed/)
  })
})
