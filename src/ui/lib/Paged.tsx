import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"

/**
 * A long list shown a page at a time (issue 46: "a long list pages"): `render` draws the rows of the current page,
 * the pager says which rows are shown and moves by buttons (keyboard-usable). A list that fits shows no pager.
 */
export const Paged = <T,>({
  items,
  size = 20,
  label,
  render
}: {
  readonly items: ReadonlyArray<T>
  readonly size?: number
  readonly label: string
  readonly render: (page: ReadonlyArray<T>) => ComponentChildren
}) => {
  const [page, setPage] = useState(0)
  const pages = Math.max(1, Math.ceil(items.length / size))
  useEffect(() => {
    if (page >= pages) setPage(pages - 1)
  }, [page, pages])
  const current = Math.min(page, pages - 1)
  const from = current * size
  const shown = items.slice(from, from + size)
  return (
    <>
      {render(shown)}
      {pages > 1 && (
        <nav class="pager" aria-label={`${label} pages`}>
          <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous
          </button>
          <span>
            {from + 1}–{from + shown.length} of {items.length}
          </span>
          <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next
          </button>
        </nav>
      )}
    </>
  )
}

/** A `Paged` table: `head` is the header row's cells, `row` draws one item's row; the table is named by `label`. */
export const PagedTable = <T,>({
  items,
  size,
  label,
  head,
  row
}: {
  readonly items: ReadonlyArray<T>
  readonly size?: number
  readonly label: string
  readonly head: ComponentChildren
  readonly row: (item: T) => ComponentChildren
}) => (
  <Paged
    items={items}
    {...(size === undefined ? {} : { size })}
    label={label}
    render={(page) => (
      <div class="scroll">
        <table aria-label={label}>
          <thead>
            <tr>{head}</tr>
          </thead>
          <tbody>{page.map(row)}</tbody>
        </table>
      </div>
    )}
  />
)
