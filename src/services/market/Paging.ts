/**
 * One page of a list and the key of the page after it (keyset pagination). A list reads one row
 * more than it answers: that row only says a next page exists; the next page starts after the last
 * item answered, so rows added or removed meanwhile neither repeat nor skip what is left.
 */
export interface Page<A, K> {
  readonly items: ReadonlyArray<A>
  /** Where the next page starts; undefined on the last page. */
  readonly next: K | undefined
}

/** Cuts `limit + 1` fetched rows to a page of `limit`, keyed by its last item when more remain. */
export const pageOf = <A, K>(rows: ReadonlyArray<A>, limit: number, key: (last: A) => K): Page<A, K> =>
  rows.length > limit ? { items: rows.slice(0, limit), next: key(rows[limit - 1]!) } : { items: rows, next: undefined }
