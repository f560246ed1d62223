import { Layer } from "effect"
import { EmbeddedVaultLayer } from "../services/platform/vault/EmbeddedVault.js"
import { DataDirLive } from "./Sql.js"

/**
 * The embedded vault alone, on the data dir's database: for commands that read a vault item and nothing else
 * (`ctl release key show`), so they construct no other service — not the retriever, not the market.
 */
export const VaultOnlyLive = EmbeddedVaultLayer.pipe(Layer.provideMerge(DataDirLive))
