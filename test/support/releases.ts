import { execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { canonicalBytes, Ed25519 } from "./keel.js"

export const sha256 = (bytes: Uint8Array) => crypto.createHash("sha256").update(bytes).digest("hex")

type KeyPair = ReturnType<typeof Ed25519.generateKeyPair>

/** `release.sig` for `manifest`'s exact bytes, by `signer`. */
export const signatureOf = (signer: KeyPair, manifest: Uint8Array) =>
  canonicalBytes({
    alg: "ed25519",
    key_id: signer.key_id,
    signature: Buffer.from(Ed25519.sign(Ed25519.privateKeyFrom(signer.private_key), manifest)).toString("base64")
  })

/** A shell script that prints `text` and exits `helpExit` (the "binary" recovery installs and probes). */
export const script = (text: string, helpExit = 0, padding = 0) =>
  `#!/bin/sh\necho "${text}"\nexit ${helpExit}\n${padding > 0 ? `# ${crypto.randomBytes(padding).toString("base64")}\n` : ""}`

/**
 * What another publisher left at `<root>/keel/<version>/`: a real .tar.gz (made by tar) holding
 * `keel-<version>/bin/ctl`, its qualification, the canonical manifest and its signature by `signer`.
 */
export const writeReleaseTree = (staging: string, root: string, version: string, binary: string, signer: KeyPair) => {
  const work = path.join(staging, version)
  fs.mkdirSync(path.join(work, `keel-${version}`, "bin"), { recursive: true })
  fs.writeFileSync(path.join(work, `keel-${version}`, "bin", "ctl"), binary, { mode: 0o755 })
  const out = path.join(root, "keel", version)
  fs.mkdirSync(out, { recursive: true })
  execFileSync("tar", ["-czf", path.join(out, "release.tar.gz"), "-C", work, `keel-${version}`])
  const artifact = fs.readFileSync(path.join(out, "release.tar.gz"))
  const qualification = canonicalBytes({ passed: true })
  const prefix = `releases/keel/${version}/`
  const manifest = canonicalBytes({
    schema: "keel.release/v1",
    product: "keel",
    version,
    channel: "stable",
    created_at: "2026-11-24T00:00:00.000Z",
    source: { revision: "1".repeat(40), tree: "2".repeat(40), sha256: "3".repeat(64), size: 1 },
    artifact: {
      key: `${prefix}release.tar.gz`,
      platform: "linux-x64",
      sha256: sha256(artifact),
      size: artifact.byteLength,
      binary: `keel-${version}/bin/ctl`
    },
    qualification: {
      key: `${prefix}qualification.json`,
      sha256: sha256(qualification),
      size: qualification.byteLength
    },
    signature: { alg: "ed25519", key_id: signer.key_id, key: `${prefix}release.sig` }
  })
  fs.writeFileSync(path.join(out, "qualification.json"), qualification)
  fs.writeFileSync(path.join(out, "release.json"), manifest)
  fs.writeFileSync(path.join(out, "release.sig"), signatureOf(signer, manifest))
}
