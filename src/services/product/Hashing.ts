/**
 * GrowthBook's v2 bucketing hash, so its public test vectors hold here too:
 * FNV-1a 32 over UTF-16 code units, applied twice, 10 000 buckets.
 * `hashV2(seed, value)` is in [0, 1).
 */
export const fnv1a32 = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

export const hashV2 = (seed: string, value: string): number =>
  (fnv1a32(String(fnv1a32(seed + value))) % 10_000) / 10_000

/**
 * Where a subject falls for an experiment. Traffic and variant use separate salts, so that
 * changing the traffic share never moves a subject between variants (Unleash once shipped
 * skewed splits by reusing one hash for both). Subjects are NFC-normalized first, so the same
 * name typed on two platforms (composed or decomposed accents) lands in the same bucket.
 */
export const buckets = (experimentId: string, subject: string) => {
  const normalized = subject.normalize("NFC")
  return {
    traffic: hashV2(`${experimentId}:traffic:`, normalized),
    variant: hashV2(`${experimentId}:variant:`, normalized)
  }
}

/** The variant whose cumulative weight range holds `n`; weights need not sum to exactly 1. */
export const chooseVariant = <V extends { readonly weight: number }>(variants: ReadonlyArray<V>, n: number) => {
  const total = variants.reduce((sum, v) => sum + v.weight, 0)
  let start = 0
  for (const variant of variants) {
    const end = start + variant.weight / total
    if (n < end) return variant
    start = end
  }
  return variants[variants.length - 1]
}
