/**
 * The statistics of the experiment readout (docs/analytics.md, "Experiment results"). Pure and
 * deterministic: no sampling, no randomness, so the same counts always give the same numbers.
 */

/** z for a two-sided 95 % interval: Φ⁻¹(0.975). */
export const Z_95 = 1.959963984540054

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7
]

/** ln Γ(x) for x > 0 (Lanczos, g = 7; about 15 significant digits). */
export const lnGamma = (x: number): number => {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x)
  const z = x - 1
  let a = LANCZOS[0] as number
  const t = z + 7.5
  for (let i = 1; i < 9; i++) a += (LANCZOS[i] as number) / (z + i)
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a)
}

/** ln B(a, b). */
export const lnBeta = (a: number, b: number) => lnGamma(a) + lnGamma(b) - lnGamma(a + b)

/**
 * The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a): the series for x < a + 1,
 * the continued fraction (modified Lentz) beyond (Numerical Recipes §6.2).
 */
export const gammaQ = (a: number, x: number): number => {
  if (x <= 0) return 1
  const lnPrefix = -x + a * Math.log(x) - lnGamma(a)
  if (x < a + 1) {
    let sum = 1 / a
    let term = sum
    for (let n = 1; n < 10_000; n++) {
      term *= x / (a + n)
      sum += term
      if (Math.abs(term) < Math.abs(sum) * 1e-16) break
    }
    return Math.max(0, 1 - sum * Math.exp(lnPrefix))
  }
  const tiny = 1e-300
  let b = x + 1 - a
  let c = 1 / tiny
  let d = 1 / b
  let h = d
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - a)
    b += 2
    d = an * d + b
    if (Math.abs(d) < tiny) d = tiny
    c = b + an / c
    if (Math.abs(c) < tiny) c = tiny
    d = 1 / d
    const delta = d * c
    h *= delta
    if (Math.abs(delta - 1) < 1e-16) break
  }
  return Math.min(1, Math.exp(lnPrefix) * h)
}

/** erfc(x) = Q(1/2, x²) for x ≥ 0, and 2 − erfc(−x) below. */
export const erfc = (x: number): number => (x >= 0 ? gammaQ(0.5, x * x) : 2 - gammaQ(0.5, x * x))

/** Φ(x), the standard normal distribution function. */
export const normalCdf = (x: number) => 0.5 * erfc(-x / Math.SQRT2)

export interface Interval {
  readonly low: number
  readonly high: number
}

/**
 * Wilson score interval of a proportion (Wilson 1927): centre (p̂ + z²/2n) / (1 + z²/n), half-width
 * z / (1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²). Undefined (null) without subjects.
 */
export const wilsonInterval = (successes: number, n: number, z = Z_95): Interval | null => {
  if (n <= 0) return null
  const p = successes / n
  const z2 = z * z
  const denominator = 1 + z2 / n
  const centre = (p + z2 / (2 * n)) / denominator
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))
  // At the edges the bound is exact: 0 of n has low 0 and n of n high 1 (centre − half leaves a 1e-17 residue).
  return {
    low: successes <= 0 ? 0 : Math.max(0, centre - half),
    high: successes >= n ? 1 : Math.min(1, centre + half)
  }
}

export interface ZTest {
  readonly z: number
  readonly p_value: number
}

/**
 * Two-proportion z-test with the pooled proportion: z = (p₂ − p₁) / √(p(1 − p)(1/n₁ + 1/n₂)),
 * two-sided p-value = erfc(|z| / √2) = 2(1 − Φ(|z|)). Null when a group is empty or nothing varies.
 */
export const twoProportionZTest = (c1: number, n1: number, c2: number, n2: number): ZTest | null => {
  if (n1 <= 0 || n2 <= 0) return null
  const pooled = (c1 + c2) / (n1 + n2)
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
  if (!(se > 0)) return null
  const z = (c2 / n2 - c1 / n1) / se
  return { z, p_value: Math.min(1, erfc(Math.abs(z) / Math.SQRT2)) }
}

/**
 * P(X_B > X_A) for X_A ~ Beta(a1, b1), X_B ~ Beta(a2, b2) with a2 a positive integer, exactly
 * (Evan Miller, "Formulas for Bayesian A/B Testing", 2015):
 *   Σ_{i=0}^{a2−1} B(a1 + i, b1 + b2) / ((b2 + i) · B(1 + i, b2) · B(a1, b1)).
 */
const betaBeatsExact = (a1: number, b1: number, a2: number, b2: number) => {
  let total = 0
  const base = lnBeta(a1, b1)
  for (let i = 0; i < a2; i++) {
    total += Math.exp(lnBeta(a1 + i, b1 + b2) - Math.log(b2 + i) - lnBeta(1 + i, b2) - base)
  }
  return total
}

/**
 * Bayesian probability that the treatment's rate beats control's, with Beta(1, 1) priors: posteriors
 * Beta(1 + c, 1 + n − c). The exact sum runs over whichever side has fewer conversions
 * (P(B > A) = 1 − P(A > B); ties have probability 0), so its cost is min(c₁, c₂) + 1 terms.
 */
export const probabilityToBeat = (c1: number, n1: number, c2: number, n2: number): number => {
  const [a1, b1, a2, b2] = [1 + c1, 1 + n1 - c1, 1 + c2, 1 + n2 - c2]
  const p = a2 <= a1 ? betaBeatsExact(a1, b1, a2, b2) : 1 - betaBeatsExact(a2, b2, a1, b1)
  return Math.min(1, Math.max(0, p))
}

export interface ChiSquare {
  readonly chi_square: number
  readonly df: number
  readonly p_value: number
}

/**
 * Pearson's chi-square goodness of fit of observed counts against expected shares (weights, any
 * scale): χ² = Σ (o − e)² / e with e = N · wᵢ / Σw, df = k − 1, p = Q(df/2, χ²/2). Null with fewer
 * than two groups, no observations or a zero expected count.
 */
export const chiSquareGoodnessOfFit = (
  observed: ReadonlyArray<number>,
  weights: ReadonlyArray<number>
): ChiSquare | null => {
  const total = observed.reduce((s, o) => s + o, 0)
  const weightSum = weights.reduce((s, w) => s + w, 0)
  if (observed.length < 2 || total <= 0 || !(weightSum > 0)) return null
  let chi = 0
  for (let i = 0; i < observed.length; i++) {
    const expected = (total * (weights[i] ?? 0)) / weightSum
    if (!(expected > 0)) return null
    chi += ((observed[i] ?? 0) - expected) ** 2 / expected
  }
  const df = observed.length - 1
  return { chi_square: chi, df, p_value: gammaQ(df / 2, chi / 2) }
}
