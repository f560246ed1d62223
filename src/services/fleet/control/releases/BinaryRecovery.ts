import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Effect, Option, Schema, Stream } from "effect"
import { ObjectStoreError } from "../../../../contracts/shared/ObjectErrors.js"
import { AppConfig } from "../../../platform/AppConfig.js"
import { fileDigest } from "../../../platform/Digest.js"
import { HostChannel } from "../../../platform/hostchannel/HostChannel.js"
import { ObjectStore } from "../../../platform/objects/ObjectStore.js"
import { FleetRegistry } from "../../shared/registry/Registry.js"
import type { ReleaseSettings, Target } from "../../shared/registry/Schema.js"
import { canonicalBytes } from "../../shared/releases/CanonicalJson.js"
import { type ReleaseReader, releaseKey, verifyRelease } from "../../shared/releases/ReleaseManifest.js"
import { renderUnit, unrenderable } from "../../shared/units/UnitRender.js"
import { RemoteCtl } from "../RemoteCtl.js"
import { HostUnits } from "../reconciler/HostUnits.js"
import { ArchiveRefused, extractEntry } from "./ArchiveEntry.js"
import { ReleaseAuthority } from "./ReleaseAuthority.js"
import { objectStoreReader } from "./ReleaseReaders.js"
import { VERSION_PATTERN } from "./ReleaseRun.js"

/** The request cannot start: unknown target, no `ctl` binary declared, no registry. Nothing changed. */
export class RecoveryRefused extends Schema.TaggedError<RecoveryRefused>()("RecoveryRefused", {
  code: Schema.Literal("RECOVERY_REFUSED"),
  detail: Schema.String
}) {}

/** The tool's own binary, the one `ctl host recover` installs (docs/releases.md). */
export const TOOL_BINARY = "ctl"

export type RecoveryStepName =
  | "download"
  | "verify"
  | "backup"
  | "install"
  | "resolver"
  | "receipt"
  | "rollback"
  | "recovery"

export interface RecoveryStep {
  readonly step: RecoveryStepName
  readonly ok: boolean
  readonly detail: string
  /** The recovery step's units it could not recover, and why (a skipped unit makes the step, and the run, not ok). */
  readonly skipped?: ReadonlyArray<{ readonly name: string; readonly reason: string }>
}

export interface RecoveryAnswer {
  readonly target: string
  readonly registry: { readonly freshness: string; readonly digest: string }
  /** null without --release: the original recovery only, no binary change. */
  readonly release: { readonly product: string; readonly version: string } | null
  readonly binary: { readonly name: string; readonly path: string } | null
  readonly object_api: { readonly status: "available" | "unavailable" | "not_used"; readonly detail: string }
  readonly steps: ReadonlyArray<RecoveryStep>
  readonly rolled_back: boolean
  readonly previous: { readonly path: string; readonly kept: boolean } | null
  readonly installed: { readonly path: string; readonly sha256: string } | null
  readonly ok: boolean
}

/** How long the installed resolver may take to answer `--help`. */
const PROBE_TIMEOUT_MS = 15_000
const STEP_TIMEOUT_MS = 120_000

/**
 * Fixed shell programs run through the raw host channel with the paths as their arguments (argv, never a string
 * built from input): nothing of Keel's runs on the target until the probe, which runs the installed binary.
 */
const SCRIPTS = {
  /** stdin → "$1" (owner-only while written), then executable, then its SHA-256. */
  stage:
    'set -e; mkdir -p -- "$(dirname -- "$1")"; umask 077; cat > "$1"; chmod 0755 "$1"; if command -v sha256sum >/dev/null 2>&1; then sha256sum -- "$1"; else shasum -a 256 -- "$1"; fi',
  /**
   * Keeps the current binary as "$1.prev" (a hard link to its inode; a copy where links fail) — unless a
   * "$1.prev" exists and the current binary is not the one its receipt describes: a delivery was cut off between
   * its install and its receipt, so the current binary was never verified and "$1.prev" is the last good one.
   */
  backup: `set -e; if [ ! -e "$1" ]; then echo none; exit 0; fi
if [ -e "$1.prev" ]; then
  if command -v sha256sum >/dev/null 2>&1; then current=$(sha256sum -- "$1"); else current=$(shasum -a 256 -- "$1"); fi
  current=\${current%% *}
  if ! grep -q "binary_sha256.:.$current" "$1.release.json" 2>/dev/null; then echo unverified; exit 0; fi
fi
rm -f -- "$1.prev"; ln -- "$1" "$1.prev" 2>/dev/null || cp -p -- "$1" "$1.prev"; echo kept`,
  /** rename(2): atomic within the directory. */
  install: 'set -e; mv -f -- "$1" "$2"',
  /** The previous binary back by rename, or the invalid install removed when there was none. */
  rollback:
    'set -e; if [ "$2" = kept ]; then rm -f -- "$1.keel-rollback"; ln -- "$1.prev" "$1.keel-rollback" 2>/dev/null || cp -p -- "$1.prev" "$1.keel-rollback"; mv -f -- "$1.keel-rollback" "$1"; echo restored; else rm -f -- "$1"; echo removed; fi',
  discard: 'rm -f -- "$1"',
  /** stdin → "$1" by rename (the delivery receipt beside the binary). */
  receipt: 'set -e; umask 022; cat > "$1.keel-tmp"; mv -f -- "$1.keel-tmp" "$1"',
  /** The receipt, then the binary's SHA-256: what the host reports of its delivered release. */
  observe:
    'if [ -f "$1.release.json" ]; then cat -- "$1.release.json"; fi; echo; if command -v sha256sum >/dev/null 2>&1; then sha256sum -- "$1" 2>/dev/null; else shasum -a 256 -- "$1" 2>/dev/null; fi; true'
} as const

/** The receipt a delivery leaves beside the binary (`<path>.release.json`): what the host then reports. */
export interface DeliveryReceipt {
  readonly schema: "keel.delivery/v1"
  readonly product: string
  readonly version: string
  readonly channel: string
  readonly binary: string
  readonly binary_sha256: string
  readonly artifact_sha256: string
  readonly manifest_sha256: string
}

/** What a host reports of a managed binary: its receipt (if any) and the SHA-256 of the file at its path. */
export interface DeliveryObservation {
  readonly receipt: DeliveryReceipt | null
  readonly sha256: string | null
  readonly detail: string
}

type ReleaseSettingsOf = typeof ReleaseSettings.Type

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim()

/**
 * `ctl host recover <target> [--release <exact>] [--bundled-registry]` (seed 002, "Binary recovery";
 * docs/releases.md). With a release: the object API's state, the exact signed artifact read from it and verified
 * — manifest, signature by the trusted key, SHA-256 — on this host before anything reaches the target, then the
 * binary streamed over the raw host channel into a staged file beside the install path and checked by its
 * SHA-256 there, the previous binary kept, the new one renamed into place, `--help` probed, and on a failed probe
 * the previous binary renamed back (or the invalid install removed). Only after a good probe: the host recovery
 * (the target's recovery-managed units ensured, its beacon timer reasserted). Without a release: the host
 * recovery alone, no binary change.
 */
export class BinaryRecovery extends Effect.Service<BinaryRecovery>()("fleet/BinaryRecovery", {
  effect: Effect.gen(function* () {
    const registry = yield* FleetRegistry
    const store = yield* ObjectStore
    const authority = yield* ReleaseAuthority
    const channel = yield* HostChannel
    const remote = yield* RemoteCtl
    const units = yield* HostUnits
    const config = yield* AppConfig

    const refused = (detail: string) => new RecoveryRefused({ code: "RECOVERY_REFUSED", detail })

    /** A fixed script on the target; its failure is the step's detail, never a thrown error. */
    const onTarget = (target: Target, script: keyof typeof SCRIPTS, args: ReadonlyArray<string>, stdinFile?: string) =>
      channel
        .run(remote.spec(target), {
          argv: ["sh", "-c", SCRIPTS[script], "sh", ...args],
          timeoutMs: STEP_TIMEOUT_MS,
          ...(stdinFile === undefined ? {} : { stdinFile })
        })
        .pipe(
          Effect.map((result) =>
            result.exitCode === 0
              ? { ok: true as const, out: text(result.stdout) }
              : {
                  ok: false as const,
                  out: `${script} exited ${result.exitCode ?? `on ${result.signal ?? "a signal"}`}${result.timedOut ? " (timed out)" : ""}: ${text(result.stderr)}`
                }
          ),
          Effect.catchAll((error) => Effect.succeed({ ok: false as const, out: error.detail }))
        )

    /** The installed resolver answers `--help` (exit 0). */
    const probe = (target: Target, binary: string) =>
      channel.run(remote.spec(target), { argv: [binary, "--help"], timeoutMs: PROBE_TIMEOUT_MS }).pipe(
        Effect.map((result) => ({
          ok: result.exitCode === 0,
          detail:
            result.exitCode === 0
              ? `${binary} --help exited 0`
              : `${binary} --help exited ${result.exitCode ?? result.signal}${result.timedOut ? " (timed out)" : ""}: ${text(result.stderr).slice(0, 500)}`
        })),
        Effect.catchAll((error) => Effect.succeed({ ok: false, detail: error.detail }))
      )

    /** The existing host recovery: recovery-managed units ensured, the beacon timer reasserted. */
    const hostRecovery = (target: Target) =>
      Effect.gen(function* () {
        const done: Array<string> = []
        const failed: Array<string> = []
        const skipped: Array<{ name: string; reason: string }> = []
        for (const service of target.services) {
          if (service.role === "beacon") {
            const outcome = yield* units
              .reassertTimer(target, { name: service.name, unit: service.unit })
              .pipe(Effect.either)
            if (outcome._tag === "Right") done.push(`${service.name}: ${outcome.right.change}`)
            else failed.push(`${service.name}: ${outcome.left.detail}`)
          } else if (service.kind === "recovery-managed") {
            // Rule 2: a declaration naming only its unit path cannot be reinstalled; said, never passed over.
            const problem = unrenderable(service)
            if (problem !== undefined) {
              skipped.push({ name: service.name, reason: problem })
              continue
            }
            const outcome = yield* units.ensure(target, renderUnit(service, target.os)).pipe(Effect.either)
            if (outcome._tag === "Right") done.push(`${service.name}: ${outcome.right.change}`)
            else failed.push(`${service.name}: ${outcome.left.detail}`)
          }
        }
        return {
          step: "recovery" as const,
          ok: failed.length === 0 && skipped.length === 0,
          detail:
            done.length + failed.length + skipped.length === 0
              ? "no recovery-managed unit or beacon is declared for the target"
              : [...done, ...failed, ...skipped.map((s) => `${s.name}: skipped (${s.reason})`)].join("; "),
          ...(skipped.length === 0 ? {} : { skipped })
        }
      })

    /** A delivery under way: where it goes, what it installs, its steps so far, and its answer from them. */
    interface Delivery {
      readonly target: Target
      readonly binary: { readonly name: string; readonly path: string }
      readonly product: string
      readonly version: string
      readonly steps: Array<RecoveryStep>
      readonly answer: (fields: Partial<RecoveryAnswer>) => RecoveryAnswer
      readonly work: string
    }

    /** The binary a release request installs, checked against the registry before anything is read. */
    const deliveryFor = (
      request: { readonly binary?: string },
      version: string,
      target: Target,
      snapshot: {
        readonly registry: {
          readonly settings: {
            readonly agent: { readonly skarbiec: { readonly secret_fields: ReadonlyArray<string> } }
          }
        }
      },
      base: Pick<RecoveryAnswer, "target" | "registry">
    ) =>
      Effect.gen(function* () {
        // A version names objects in the store: one that is not a version is the caller's mistake, never a lookup.
        if (!VERSION_PATTERN.test(version))
          return yield* refused(
            `${JSON.stringify(version.slice(0, 80))} is not a version (letters, digits, . + _ -; at most 64, starting with a letter or digit)`
          )
        const binaryName = request.binary ?? TOOL_BINARY
        const binary = target.binaries.find((b) => b.name === binaryName)
        if (binary === undefined)
          return yield* refused(`${target.name} declares no binary named ${binaryName} (targets[].binaries)`)
        const product = binary.product
        // The delivery secret — the ssh identity the binary travels with — must be one the registry allows.
        if (typeof target.channel !== "string") {
          const reference = target.channel.ssh.identity_item
          if (!snapshot.registry.settings.agent.skarbiec.secret_fields.includes(reference))
            return yield* refused(
              `${target.name}'s delivery secret ${reference} (its ssh identity) is not in settings.agent.skarbiec.secret_fields`
            )
        }
        const steps: Array<RecoveryStep> = []
        const answer = (fields: Partial<RecoveryAnswer>): RecoveryAnswer => ({
          ...base,
          release: { product, version },
          binary: { name: binary.name, path: binary.path },
          object_api: { status: "available", detail: "" },
          steps,
          rolled_back: false,
          previous: null,
          installed: null,
          ok: false,
          ...fields
        })
        const work = path.join(config.dataDir, "run", `recover-${process.pid}-${randomBytes(4).toString("hex")}`)
        return { target, binary, product, version, steps, answer, work } satisfies Delivery
      })

    /** download: the exact artifact, spooled into the work dir (streamed, never whole in memory). */
    const download = (d: Delivery, artifactFile: string) =>
      Effect.gen(function* () {
        const key = releaseKey(d.product, d.version, "release.tar.gz")
        const downloaded = yield* Effect.gen(function* () {
          const found = yield* store.read(key)
          if (Option.isNone(found)) return `releases/${d.product}/${d.version}/release.tar.gz does not exist`
          yield* Effect.tryPromise({
            try: () =>
              pipeline(
                Readable.from(Stream.toAsyncIterable(found.value.body)),
                fs.createWriteStream(artifactFile, { flags: "wx", mode: 0o600 })
              ),
            catch: (e) => new ObjectStoreError({ code: "OBJECT_STORE_ERROR", key, detail: String(e) })
          })
          return null
        }).pipe(Effect.catchAll((e) => Effect.succeed(`the object API: ${e.detail}`)))
        d.steps.push({ step: "download", ok: downloaded === null, detail: downloaded ?? `${store.scheme}://${key}` })
        return downloaded === null
      })

    /**
     * verify: manifest and signature from the store, the artifact's digest from the very file downloaded, the
     * binary extracted from it. None when it does not verify (the step says why).
     */
    const verify = (d: Delivery, settings: ReleaseSettingsOf, artifactFile: string, binaryFile: string) =>
      Effect.gen(function* () {
        const failed = (detail: string) =>
          Effect.as(
            Effect.sync(() => d.steps.push({ step: "verify", ok: false, detail })),
            Option.none()
          )
        const trusted = yield* authority.trustedBy(settings).pipe(Effect.either)
        if (trusted._tag === "Left") return yield* failed(trusted.left.detail)
        const storeReader = objectStoreReader(store, d.product, d.version)
        const reader: ReleaseReader = {
          bytes: storeReader.bytes,
          digest: (file) =>
            file === "release.tar.gz" ? Effect.promise(() => fileDigest(artifactFile)) : storeReader.digest(file)
        }
        const verified = yield* verifyRelease(reader, { product: d.product, version: d.version }, trusted.right)
        const manifest = verified.manifest
        if (!verified.ok || manifest === null)
          return yield* failed(verified.problems.map((p) => `${p.code}: ${p.detail}`).join("; "))
        const extracted = yield* Effect.tryPromise({
          try: () =>
            extractEntry(
              fs.createReadStream(artifactFile) as AsyncIterable<Uint8Array>,
              manifest.artifact.binary,
              binaryFile
            ),
          catch: (e) => (e instanceof ArchiveRefused ? e.message : String(e))
        }).pipe(Effect.either)
        if (extracted._tag === "Left") return yield* failed(extracted.left)
        if (extracted.right === null) return yield* failed(`the archive holds no ${manifest.artifact.binary}`)
        const entry = extracted.right
        d.steps.push({
          step: "verify",
          ok: true,
          detail: `release.json signed by ${trusted.right.key_id}; release.tar.gz sha256 ${manifest.artifact.sha256}; ${manifest.artifact.binary} sha256 ${entry.sha256}`
        })
        return Option.some({ manifest, manifestSha256: verified.manifest_sha256 ?? "", entry })
      })

    /** backup: the previous binary kept as <path>.prev (never an unverified one over the last good one). */
    const backup = (d: Delivery) =>
      Effect.gen(function* () {
        const path_ = d.binary.path
        const kept = yield* onTarget(d.target, "backup", [path_])
        d.steps.push({
          step: "backup",
          ok: kept.ok,
          detail: !kept.ok
            ? kept.out
            : kept.out === "kept"
              ? `${path_}.prev`
              : kept.out === "unverified"
                ? `${path_} is not the binary its receipt describes (a delivery cut off before its receipt): ${path_}.prev, the last verified one, stays the previous binary`
                : "no previous binary"
        })
        if (!kept.ok) return Option.none()
        return Option.some({ path: `${path_}.prev`, kept: kept.out === "kept" || kept.out === "unverified" })
      })

    /** install: streamed into a staged file beside the install path, its SHA-256 read back, renamed into place. */
    const install = (d: Delivery, binaryFile: string, sha256: string) =>
      Effect.gen(function* () {
        const staged = path.join(
          path.dirname(d.binary.path),
          `.${path.basename(d.binary.path)}.keel-recover-${randomBytes(4).toString("hex")}`
        )
        const stage = yield* onTarget(d.target, "stage", [staged], binaryFile)
        const stagedSha = stage.ok ? (stage.out.split(/\s+/)[0] ?? "") : ""
        if (!stage.ok || stagedSha !== sha256) {
          yield* onTarget(d.target, "discard", [staged])
          d.steps.push({
            step: "install",
            ok: false,
            detail: stage.ok ? `the staged file's sha256 is ${stagedSha}, not ${sha256}` : stage.out
          })
          return false
        }
        const installed = yield* onTarget(d.target, "install", [staged, d.binary.path])
        d.steps.push({
          step: "install",
          ok: installed.ok,
          detail: installed.ok ? `${d.binary.path} sha256 ${sha256}` : installed.out
        })
        if (!installed.ok) yield* onTarget(d.target, "discard", [staged])
        return installed.ok
      })

    /** resolver: the installed binary answers --help; otherwise the rollback, and whether it put things back. */
    const resolve = (d: Delivery, kept: boolean) =>
      Effect.gen(function* () {
        const probed = yield* probe(d.target, d.binary.path)
        d.steps.push({ step: "resolver", ok: probed.ok, detail: probed.detail })
        if (probed.ok) return Option.none()
        const rolledBack = yield* onTarget(d.target, "rollback", [d.binary.path, kept ? "kept" : "none"])
        const after = kept && rolledBack.ok ? yield* probe(d.target, d.binary.path) : null
        d.steps.push({
          step: "rollback",
          // Put back, and answering: a previous binary that no longer answers --help is no recovery.
          ok: rolledBack.ok && (after?.ok ?? true),
          detail: rolledBack.ok
            ? kept
              ? `the previous binary is back at ${d.binary.path}${after === null ? "" : `; ${after.detail}`}`
              : `no previous binary: the invalid install ${d.binary.path} was removed`
            : rolledBack.out
        })
        return Option.some(rolledBack.ok)
      })

    /** receipt: what the host will report of this binary — the release it came from, exactly. */
    const writeReceipt = (
      d: Delivery,
      verified: Option.Option.Value<Effect.Effect.Success<ReturnType<typeof verify>>>
    ) =>
      Effect.gen(function* () {
        const receiptFile = path.join(d.work, "receipt.json")
        fs.writeFileSync(
          receiptFile,
          canonicalBytes({
            schema: "keel.delivery/v1",
            product: d.product,
            version: d.version,
            channel: verified.manifest.channel,
            binary: d.binary.name,
            binary_sha256: verified.entry.sha256,
            artifact_sha256: verified.manifest.artifact.sha256,
            manifest_sha256: verified.manifestSha256
          } satisfies DeliveryReceipt)
        )
        const receipt = yield* onTarget(d.target, "receipt", [`${d.binary.path}.release.json`], receiptFile)
        d.steps.push({
          step: "receipt",
          ok: receipt.ok,
          detail: receipt.ok ? `${d.binary.path}.release.json` : receipt.out
        })
        return receipt.ok
      })

    /** The delivery's phases in order, in its own work dir (removed after): each stops the run when it fails. */
    const deliver = (
      d: Delivery,
      objectApi: RecoveryAnswer["object_api"],
      settings: ReleaseSettingsOf,
      hostRecoveryAfter: boolean
    ) =>
      Effect.acquireUseRelease(
        Effect.sync(() => fs.mkdirSync(d.work, { recursive: true, mode: 0o700 })),
        () =>
          Effect.gen(function* () {
            const artifactFile = path.join(d.work, "release.tar.gz")
            const binaryFile = path.join(d.work, "binary")
            if (!(yield* download(d, artifactFile))) return d.answer({ object_api: objectApi })
            const verified = yield* verify(d, settings, artifactFile, binaryFile)
            if (Option.isNone(verified)) return d.answer({ object_api: objectApi })
            const previous = yield* backup(d)
            if (Option.isNone(previous)) return d.answer({ object_api: objectApi })
            const stopped = { object_api: objectApi, previous: previous.value }
            if (!(yield* install(d, binaryFile, verified.value.entry.sha256))) return d.answer(stopped)
            const rolledBack = yield* resolve(d, previous.value.kept)
            if (Option.isSome(rolledBack)) return d.answer({ ...stopped, rolled_back: rolledBack.value })
            const receipt = yield* writeReceipt(d, verified.value)
            const recovery = hostRecoveryAfter ? yield* hostRecovery(d.target) : null
            if (recovery !== null) d.steps.push(recovery)
            return d.answer({
              ...stopped,
              installed: { path: d.binary.path, sha256: verified.value.entry.sha256 },
              ok: receipt && (recovery?.ok ?? true)
            })
          }),
        () => Effect.sync(() => fs.rmSync(d.work, { recursive: true, force: true }))
      )

    const recover = (request: {
      readonly target: string
      readonly release: Option.Option<string>
      readonly bundledRegistry: boolean
      /** The managed binary to install (default the tool's own, `ctl`). */
      readonly binary?: string
      /** After a good probe, the host recovery (default); `ctl host release` delivers the binary only. */
      readonly hostRecovery?: boolean
    }) =>
      Effect.gen(function* () {
        const snapshot = yield* (
          request.bundledRegistry ? registry.bundled() : registry.read({ allowCached: true })
        ).pipe(Effect.mapError((e) => refused(`no registry: ${e.detail}`)))
        const target = snapshot.registry.targets.find((t) => t.name === request.target)
        if (target === undefined) return yield* refused(`${request.target} is not a target of the registry`)
        const base = {
          target: target.name,
          registry: { freshness: snapshot.freshness, digest: snapshot.digest }
        }
        if (Option.isNone(request.release)) {
          const recovery = yield* hostRecovery(target)
          return {
            ...base,
            release: null,
            binary: null,
            object_api: { status: "not_used", detail: "no --release: the binary is not changed" },
            steps: [recovery],
            rolled_back: false,
            previous: null,
            installed: null,
            ok: recovery.ok
          } satisfies RecoveryAnswer
        }
        const d = yield* deliveryFor(request, request.release.value, target, snapshot, base)

        // The object API boundary: the release store this control plane serves.
        const markerKey = releaseKey(d.product, d.version, "release.json")
        const marker = yield* store.head(markerKey).pipe(Effect.either)
        if (marker._tag === "Left")
          return d.answer({ object_api: { status: "unavailable", detail: marker.left.detail } })
        const objectApi = {
          status: "available" as const,
          detail:
            marker.right._tag === "Some"
              ? `${store.scheme}://${markerKey}`
              : `${store.scheme}:// answers; ${d.product} ${d.version} is not published there`
        }
        return yield* deliver(d, objectApi, snapshot.registry.settings.release, request.hostRecovery !== false)
      })

    /** What the target reports of a managed binary at `binaryPath`: its delivery receipt and its digest. */
    const observe = (target: Target, binaryPath: string) =>
      Effect.map(onTarget(target, "observe", [binaryPath]), (seen): DeliveryObservation => {
        if (!seen.ok) return { receipt: null, sha256: null, detail: seen.out }
        const lines = seen.out.split("\n")
        const sha = lines.at(-1)?.split(/\s+/)[0]
        let receipt: DeliveryReceipt | null = null
        try {
          const parsed = JSON.parse(lines.slice(0, -1).join("\n").trim() || "null") as DeliveryReceipt | null
          if (parsed?.schema === "keel.delivery/v1") receipt = parsed
        } catch {}
        const sha256 = sha !== undefined && /^[0-9a-f]{64}$/.test(sha) ? sha : null
        return {
          receipt,
          sha256,
          detail: `${receipt === null ? "no receipt" : `receipt ${receipt.product} ${receipt.version}`}; ${sha256 === null ? "no binary" : `sha256 ${sha256}`}`
        }
      })

    return { recover, observe } as const
  })
}) {}
