import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { ImportStep } from "../platform/DatabaseTransfer.js"
import { TextSearch } from "./TextSearch.js"

const PAGE = 500

/**
 * After `ctl db import`: every chunk made searchable, as an ingest does. An export carries `gt_chunks`, not the
 * index derived from it (SQLite's FTS5 table); on PostgreSQL the search document is a generated column, filled as
 * the rows went in, and indexing is nothing to do.
 */
export const searchIndexRebuild = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const search = yield* TextSearch
  const run = Effect.gen(function* () {
    let after = -1
    let indexed = 0
    for (;;) {
      const rows = yield* sql<{ id: number | string | bigint; heading: string; content: string; terms: string }>`
        SELECT id, heading, content, terms FROM gt_chunks WHERE id > ${after} ORDER BY id LIMIT ${PAGE}`
      if (rows.length === 0) break
      yield* search.index(rows.map((row) => ({ ...row, id: Number(row.id) })))
      indexed += rows.length
      after = Number(rows.at(-1)!.id)
    }
    return { ok: true, summary: `${indexed} chunk(s) searchable`, problems: [] }
  }).pipe(Effect.orDie)
  return { name: "ground truth search index", run } satisfies ImportStep
})
