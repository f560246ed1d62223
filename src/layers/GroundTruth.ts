import { Layer } from "effect"
import { Answerer } from "../services/groundtruth/Answerer.js"
import { BrandAssets } from "../services/groundtruth/BrandAssets.js"
import { EmbedderFromConfig } from "../services/groundtruth/Embedder.js"
import { GtConfig } from "../services/groundtruth/GtConfig.js"
import { Ingester } from "../services/groundtruth/Ingester.js"
import { Retriever } from "../services/groundtruth/Retriever.js"
import { Sources } from "../services/groundtruth/Sources.js"
import { SqlWithSettingsLive } from "./Sql.js"
import { TextSearchFromClient } from "./TextSearch.js"

/** Ground truth: its sources and their mirrors, the index and the retriever over it, ingest, answers, brand assets. */
export const GroundTruthServices = Layer.mergeAll(Ingester.Default, Answerer.Default, BrandAssets.Default).pipe(
  Layer.provideMerge(Retriever.Default),
  // FTS5 or PostgreSQL's tsvector, by the engine of the SqlClient it is given.
  Layer.provideMerge(TextSearchFromClient),
  Layer.provideMerge(EmbedderFromConfig),
  Layer.provideMerge(Sources.Default),
  Layer.provideMerge(GtConfig.Default)
)

/** Ground truth alone on the embedded defaults: `ctl gt`. */
export const GroundTruthLive = GroundTruthServices.pipe(Layer.provideMerge(SqlWithSettingsLive))
