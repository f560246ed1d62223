/**
 * `text` with every occurrence of each value replaced by `[redacted]`; the longest values first, so a secret that
 * contains another is hidden whole. Empty values are ignored.
 */
export const redactValues = (text: string, values: ReadonlyArray<string>) =>
  values
    .filter((v) => v.length > 0)
    .sort((a, b) => b.length - a.length)
    .reduce((out, value) => out.split(value).join("[redacted]"), text)
