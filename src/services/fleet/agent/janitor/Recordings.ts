import * as fs from "node:fs"
import * as path from "node:path"
import { sha256File } from "../../../platform/Digest.js"
import type { Candidate, Skip } from "./BuildCaches.js"
import { type ScanBudget, sortedFileWalk } from "./ScanBudget.js"

/** `<recording>.upload-proof.json`, written by the uploader once the destination confirmed the bytes. */
export interface UploadProof {
  readonly file: string
  readonly size: number
  readonly sha256: string
  readonly uploaded_at: string
  readonly destination: string
}

export const PROOF_SUFFIX = ".upload-proof.json"

/**
 * Why a recording may not go yet, or undefined when its proof matches the file byte for byte. `name` is
 * the recording's file name when `file` names it through a directory handle.
 */
export const recordingRefusal = (
  file: string,
  minAgeMs: number,
  nowMs: number,
  name = path.basename(file)
): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.lstatSync(file)
  } catch {
    return "missing"
  }
  if (!stat.isFile()) return "not_a_regular_file"
  if (nowMs - stat.mtimeMs < minAgeMs) return "too_young"
  let proof: UploadProof
  try {
    proof = JSON.parse(fs.readFileSync(`${file}${PROOF_SUFFIX}`, "utf8")) as UploadProof
  } catch {
    return "no_upload_proof"
  }
  if (proof.file !== name) return "proof_names_another_file"
  if (proof.size !== stat.size) return "proof_size_mismatch"
  if (typeof proof.sha256 !== "string" || proof.sha256.toLowerCase() !== sha256File(file))
    return "proof_sha256_mismatch"
  return undefined
}

/**
 * weles_recordings: a recording is eligible only past its declared age and with an upload proof
 * whose size and SHA-256 the janitor re-computes from the file (at scan and again at deletion). The
 * cheap checks (age, proof, name, size) come first, so only files that pass them are hashed; files are
 * walked in path order after `cursor`, within the pass's scan budget.
 */
export const scanRecordings = (options: {
  readonly root: string
  readonly minAgeSeconds: number
  readonly nowMs: number
  readonly budget: ScanBudget
  readonly cursor: string | null
}) => {
  const candidates: Array<Candidate> = []
  const skipped: Array<Skip> = []
  let scanned = 0
  const cursor = sortedFileWalk(options.root, options.cursor, options.budget, (relative, stat) => {
    scanned++
    const full = path.join(options.root, relative)
    if (!stat.isFile() || relative.endsWith(PROOF_SUFFIX)) return
    const refusal = recordingRefusal(full, options.minAgeSeconds * 1000, options.nowMs)
    if (refusal === undefined)
      candidates.push({
        path: full,
        bytes: stat.size,
        reason: "recording_uploaded",
        dev: stat.dev,
        ino: stat.ino,
        directory: false
      })
    else skipped.push({ path: full, reason: refusal })
  })
  return { candidates, skipped, scanned, cursor }
}
