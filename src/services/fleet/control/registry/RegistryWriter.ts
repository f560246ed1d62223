import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { Clock, Config, Effect, Schema } from "effect"
import * as Yaml from "yaml"
import { sha256Hex } from "../../../platform/Digest.js"
import { withFileLockEffect } from "../../../platform/FileLock.js"
import { GitMirror, stripCredentials } from "../../../platform/GitMirror.js"
import { ObjectGateway } from "../../../platform/objects/ObjectGateway.js"
import { FleetRegistry, FleetRegistryInvalid, FleetRegistryUnavailable } from "../../shared/registry/Registry.js"

/** The registry is no longer what the writer read (compare-and-set on its digest): nothing was written. */
export class RegistryConflict extends Schema.TaggedError<RegistryConflict>()("RegistryConflict", {
  code: Schema.Literal("REGISTRY_CONFLICT"),
  expected: Schema.String,
  current: Schema.String,
  detail: Schema.String
}) {}

/** The write itself failed (the file system, a git push refused for another reason than a conflict). */
export class RegistryWriteFailed extends Schema.TaggedError<RegistryWriteFailed>()("RegistryWriteFailed", {
  code: Schema.Literal("REGISTRY_WRITE_FAILED"),
  detail: Schema.String
}) {}

export interface RegistryWrite {
  readonly digest_before: string
  readonly digest_after: string
  readonly source: { readonly kind: "file" | "git"; readonly location: string; readonly commit?: string }
  readonly audit_key: string
}

/** RFC 7386 JSON merge patch: objects merge key by key, `null` removes a key, anything else replaces. */
export const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch
  const base = typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {}
  const out = base as Record<string, unknown>
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete out[key]
    else out[key] = mergePatch(out[key], value)
  }
  return out
}

/** Writes go to a temporary file beside the registry, then replace it by rename (same file system). */
const writeAtomically = async (file: string, text: string) => {
  const mode = await fs.stat(file).then(
    (s) => s.mode & 0o777,
    () => 0o644
  )
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.keel-${process.pid}-${Date.now()}`)
  const handle = await fs.open(temp, "wx", mode)
  try {
    // The registry keeps its mode whatever the process umask (the server's is 077).
    await handle.chmod(mode)
    await handle.writeFile(text)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await fs.rename(temp, file)
  const dir = await fs.open(path.dirname(file), "r")
  try {
    await dir.sync()
  } finally {
    await dir.close()
  }
}

/**
 * Writes the canonical registry with compare-and-set on its digest: the caller names the digest it read
 * (`ctl registry show` prints it); a registry that changed since is a RegistryConflict and nothing is
 * written. The new text is validated by the same strict schema and cross-checks as every read first. The
 * file source is replaced atomically under a lock beside it (writers in several processes are serialized);
 * the git source gets one commit on its branch, pushed as a fast-forward only (a remote that moved is a
 * conflict). Then the last valid snapshot is refreshed and an audit object is written.
 */
export class RegistryWriter extends Effect.Service<RegistryWriter>()("fleet/RegistryWriter", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const objects = yield* ObjectGateway
    const operator = yield* Config.string("KEEL_OPERATOR").pipe(Config.withDefault(os.userInfo().username))
    const author = {
      name: yield* Config.string("KEEL_REGISTRY_AUTHOR_NAME").pipe(Config.withDefault(`keel (${operator})`)),
      email: yield* Config.string("KEEL_REGISTRY_AUTHOR_EMAIL").pipe(Config.withDefault("keel@localhost"))
    }
    const origin = registry.origin

    const failed = (detail: string) => new RegistryWriteFailed({ code: "REGISTRY_WRITE_FAILED", detail })
    const conflict = (expected: string, current: string, why: string) =>
      new RegistryConflict({ code: "REGISTRY_CONFLICT", expected, current, detail: why })

    /** The next text, validated; the change gets the current text. */
    const nextText = (current: string, change: (text: string) => string, source: string) =>
      Effect.gen(function* () {
        const text = yield* Effect.try({
          try: () => change(current),
          catch: (error) =>
            new FleetRegistryInvalid({
              code: "REGISTRY_INVALID",
              source,
              problems: [`(change): ${(error as Error).message}`],
              detail: `the change could not be applied: ${(error as Error).message}`
            })
        })
        // The text that would be written is what is invalid, not the registry that is there now.
        yield* registry
          .parse(text, source)
          .pipe(
            Effect.mapError((invalid) =>
              invalid._tag === "FleetRegistryInvalid"
                ? new FleetRegistryInvalid({ ...invalid, detail: `the change to ${invalid.detail}` })
                : invalid
            )
          )
        return text
      })

    /** The critical section of a file write, under the file's lock: compare, change, validate, write. */
    const writeUnderLock = (file: string, expected: string, change: (text: string) => string) =>
      Effect.gen(function* () {
        const io = <A>(step: () => Promise<A>) =>
          Effect.tryPromise({ try: step, catch: (error) => failed(`${file}: ${(error as Error).message}`) })
        const current = yield* io(() => fs.readFile(file, "utf8"))
        const before = sha256Hex(current)
        if (before !== expected) return { _tag: "conflict" as const, before }
        const outcome = yield* Effect.either(nextText(current, change, file))
        if (outcome._tag === "Left") return { _tag: "invalid" as const, error: outcome.left }
        yield* io(() => writeAtomically(file, outcome.right))
        return { _tag: "written" as const, before, after: sha256Hex(outcome.right) }
      })

    const writeFile = (file: string, expected: string, change: (text: string) => string) =>
      withFileLockEffect(
        path.join(path.dirname(file), `.${path.basename(file)}.lock`),
        writeUnderLock(file, expected, change),
        (error) => failed(`${file}: ${(error as Error).message}`)
      ).pipe(
        Effect.flatMap(
          (result): Effect.Effect<Omit<RegistryWrite, "audit_key">, RegistryConflict | FleetRegistryInvalid> =>
            result._tag === "conflict"
              ? Effect.fail(
                  conflict(expected, result.before, `${file} changed since it was read (digest ${result.before})`)
                )
              : result._tag === "invalid"
                ? Effect.fail(result.error)
                : Effect.succeed({
                    digest_before: result.before,
                    digest_after: result.after,
                    source: { kind: "file", location: file }
                  })
        )
      )

    const writeGit = (url: string, expected: string, change: (text: string) => string, reason: string) =>
      Effect.gen(function* () {
        const shown = stripCredentials(url)
        const unavailable = (detail: string) =>
          new FleetRegistryUnavailable({ code: "REGISTRY_UNAVAILABLE", source: shown, detail })
        const dir = yield* GitMirror.sync(url, origin.mirrorsDir, { stallMs: origin.gitTimeoutMs }).pipe(
          Effect.mapError((e) => unavailable(e.detail))
        )
        const branch =
          origin.ref ?? (yield* GitMirror.defaultBranch(dir).pipe(Effect.mapError((e) => unavailable(e.detail))))
        const parent = yield* GitMirror.resolve(dir, branch).pipe(
          Effect.mapError(() => unavailable(`${branch} is not a branch of ${shown} (a write needs a branch)`))
        )
        const bytes = yield* GitMirror.show(dir, parent, origin.filePath).pipe(
          Effect.mapError((e) => unavailable(e.detail))
        )
        if (bytes === undefined) return yield* unavailable(`${origin.filePath} does not exist at ${parent}`)
        const current = bytes.toString("utf8")
        const before = sha256Hex(current)
        if (before !== expected)
          return yield* conflict(expected, before, `${shown} ${branch} changed since it was read (digest ${before})`)
        const text = yield* nextText(current, change, shown)
        const commit = yield* GitMirror.commitFile(
          dir,
          parent,
          origin.filePath,
          new TextEncoder().encode(text),
          `registry: ${reason}\n\nby ${operator} with ctl (digest ${before.slice(0, 12)} → ${sha256Hex(text).slice(0, 12)})`,
          author
        ).pipe(Effect.mapError((e) => failed(e.detail)))
        const pushed = yield* GitMirror.push(url, origin.mirrorsDir, dir, commit, branch, origin.gitTimeoutMs).pipe(
          Effect.mapError((e) => failed(e.detail))
        )
        if (pushed === "rejected")
          return yield* conflict(
            expected,
            before,
            `${shown} ${branch} moved on the remote while writing; read it again`
          )
        return {
          digest_before: before,
          digest_after: sha256Hex(text),
          source: { kind: "git" as const, location: shown, commit }
        }
      })

    /**
     * Replaces the registry's text by `change(current)` if its digest is still `expected`. `reason` goes into
     * the audit record (and the git commit message).
     */
    const update = Effect.fn("RegistryWriter.update")(function* (
      expected: string,
      change: (text: string) => string,
      reason: string
    ) {
      if (origin.location === undefined)
        return yield* new FleetRegistryUnavailable({
          code: "REGISTRY_UNAVAILABLE",
          source: "(none)",
          detail: "KEEL_REGISTRY is not set"
        })
      const written = origin.isGit
        ? yield* writeGit(origin.location, expected, change, reason)
        : yield* writeFile(origin.location, expected, change)
      // The new registry becomes the last valid snapshot at once (a read records it), and the server's held
      // snapshot is read again: a write is in force on the next request, not after the refresh interval.
      yield* registry.reread
      const at = yield* Clock.currentTimeMillis
      const auditKey = `state/registry/audit/${new Date(at).toISOString().replace(/[:.]/g, "-")}-${written.digest_after.slice(0, 12)}.json`
      const audit = { at: new Date(at).toISOString(), operator, reason, ...written }
      yield* objects.putJson(auditKey, audit).pipe(Effect.ignore)
      yield* Effect.logInfo("registry written").pipe(
        Effect.annotateLogs({
          operator,
          reason,
          before: written.digest_before,
          after: written.digest_after,
          source: written.source.location,
          ...("commit" in written.source ? { commit: written.source.commit } : {})
        })
      )
      return { ...written, audit_key: auditKey } satisfies RegistryWrite
    })

    /** `ctl registry set`: the whole document. */
    const set = (expected: string, text: string, reason: string) => update(expected, () => text, reason)

    /** `ctl registry apply`: an RFC 7386 merge patch (YAML or JSON) on the current document. */
    const apply = (expected: string, patchText: string, reason: string) =>
      Effect.gen(function* () {
        const patch = yield* Effect.try({
          try: () => Yaml.parse(patchText) as unknown,
          catch: (error) =>
            new FleetRegistryInvalid({
              code: "REGISTRY_INVALID",
              source: "(patch)",
              problems: [`(patch): ${(error as Error).message.split("\n")[0]}`],
              detail: "the patch is not valid YAML or JSON"
            })
        })
        return yield* update(expected, (current) => Yaml.stringify(mergePatch(Yaml.parse(current), patch)), reason)
      })

    return { update, set, apply } as const
  })
}) {}
