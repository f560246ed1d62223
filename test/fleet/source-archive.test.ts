import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { assert, describe, it } from "vitest"
import { archiveSource } from "../support/keel.js"

// Issue 19, submit's first rule: a release is made from a clean committed tree, archived deterministically — the
// same commit gives the same bytes — and no remote is contacted (the repository's remote does not exist).

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-source-"))
const repo = path.join(dir, "repo")
const git = (...args: Array<string>) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@x",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@x",
      GIT_AUTHOR_DATE: "2026-01-02T03:04:05Z",
      GIT_COMMITTER_DATE: "2026-01-02T03:04:05Z"
    }
  }).trim()
const archive = (out: string) =>
  Effect.runPromise(Effect.either(archiveSource(repo, "keel", "1.2.3", path.join(dir, out))))

describe("archiveSource", () => {
  it("refuses what is not a clean committed tree, and archives a commit byte for byte the same", async () => {
    fs.mkdirSync(repo)
    git("init", "-q")
    git("remote", "add", "origin", "https://unreachable.invalid/repo.git")
    const empty = await archive("empty.tar.gz")
    assert.isTrue(empty._tag === "Left" && empty.left.detail.includes("has no commit"))

    fs.mkdirSync(path.join(repo, "src"))
    fs.writeFileSync(path.join(repo, "src", "main.ts"), "export {}\n")
    fs.writeFileSync(path.join(repo, "README.md"), "# keel\n")
    git("add", ".")
    git("commit", "-qm", "first")
    const first = await archive("a.tar.gz")
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const second = await archive("b.tar.gz")
    assert.isTrue(first._tag === "Right" && second._tag === "Right")
    if (first._tag !== "Right" || second._tag !== "Right") return
    assert.strictEqual(first.right.revision, git("rev-parse", "HEAD"))
    assert.strictEqual(first.right.tree, git("rev-parse", "HEAD^{tree}"))
    assert.strictEqual(first.right.sha256, second.right.sha256, "the same commit, the same bytes")
    assert.strictEqual(first.right.size, fs.statSync(path.join(dir, "a.tar.gz")).size)
    assert.deepStrictEqual(
      execFileSync("tar", ["-tzf", path.join(dir, "a.tar.gz")], { encoding: "utf8" })
        .trim()
        .split("\n")
        .sort(),
      ["keel-1.2.3/", "keel-1.2.3/README.md", "keel-1.2.3/src/", "keel-1.2.3/src/main.ts"]
    )

    // Unstaged, staged and untracked changes are all refused; nothing is written.
    for (const [change, undo] of [
      [() => fs.appendFileSync(path.join(repo, "README.md"), "more\n"), () => git("checkout", "--", "README.md")],
      [
        () => {
          fs.appendFileSync(path.join(repo, "README.md"), "staged\n")
          git("add", "README.md")
        },
        () => git("reset", "-q", "--hard")
      ],
      [() => fs.writeFileSync(path.join(repo, "new.txt"), "x"), () => fs.rmSync(path.join(repo, "new.txt"))]
    ] as const) {
      change()
      const refused = await archive("dirty.tar.gz")
      assert.isTrue(refused._tag === "Left" && refused.left.code === "SOURCE_REFUSED")
      assert.isFalse(fs.existsSync(path.join(dir, "dirty.tar.gz")))
      undo()
    }
    // A subdirectory is not the tree's top; a directory that is no repository is refused.
    const sub = await Effect.runPromise(
      Effect.either(archiveSource(path.join(repo, "src"), "keel", "1", path.join(dir, "s.tgz")))
    )
    assert.isTrue(sub._tag === "Left" && sub.left.detail.includes("give its top"))
    const none = await Effect.runPromise(
      Effect.either(archiveSource(os.tmpdir(), "keel", "1", path.join(dir, "n.tgz")))
    )
    assert.isTrue(none._tag === "Left")
    // Clean again: the same digest as before.
    const again = await archive("c.tar.gz")
    assert.isTrue(again._tag === "Right" && again.right.sha256 === first.right.sha256)
  }, 60_000)
})
