import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { TextSearch } from "../services/groundtruth/TextSearch.js"
import { fts5TextSearch } from "../services/groundtruth/TextSearchFts5.js"
import { pgTextSearch } from "../services/groundtruth/TextSearchPg.js"

/** Ground truth's full-text search for the engine of the SqlClient in context: never a separate setting. */
export const TextSearchFromClient = Layer.effect(
  TextSearch,
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({ pg: () => pgTextSearch(sql), orElse: () => Effect.succeed(fts5TextSearch(sql)) })
  )
)
