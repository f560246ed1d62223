import { Layer } from "effect"
import { AppConfig } from "../services/platform/AppConfig.js"
import { EmbeddedVaultLayer } from "../services/platform/vault/EmbeddedVault.js"
import { SqlLive } from "./Sql.js"

/**
 * The embedded vault alone, on the data dir's database: for commands that read a vault item and nothing else
 * (`ctl release key show`), so they construct no other service — not the retriever, not the market.
 */
export const VaultOnlyLive = EmbeddedVaultLayer.pipe(Layer.provideMerge(SqlLive), Layer.provideMerge(AppConfig.Default))
