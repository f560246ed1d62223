import { Layer } from "effect"
import { Agents } from "../services/market/Agents.js"
import { ApiKeys } from "../services/market/ApiKeys.js"
import { Chat } from "../services/market/Chat.js"
import { CoinIssuance } from "../services/market/CoinIssuance.js"
import { CoinHistory, CoinPriceSource } from "../services/market/CoinPrice.js"
import { Ledger } from "../services/market/Ledger.js"
import { MarketConfig } from "../services/market/MarketConfig.js"
import { MarketEvents } from "../services/market/MarketEvents.js"
import { RateLimits } from "../services/market/RateLimits.js"
import { TokenBoard } from "../services/market/TokenBoard.js"
import { TokenMarket } from "../services/market/TokenMarket.js"
import { Trading } from "../services/market/Trading.js"
import { WalletAuth } from "../services/market/WalletAuth.js"
import { Shutdown } from "../services/platform/Shutdown.js"
import { SqlWithSettingsLive } from "./Sql.js"

/** The marketplace: the ledger under the curves, agents, chat and its stream, auth, the coin's price. */
export const MarketServices = Layer.mergeAll(
  Trading.Default,
  TokenBoard.Default,
  ApiKeys.Default,
  WalletAuth.Default,
  CoinHistory.Default,
  CoinIssuance.Default,
  RateLimits.Default
).pipe(
  Layer.provideMerge(Agents.Default),
  Layer.provideMerge(Chat.Default),
  Layer.provideMerge(MarketEvents.Default),
  Layer.provideMerge(CoinPriceSource.AdminSet),
  Layer.provideMerge(TokenMarket.Default),
  Layer.provideMerge(Ledger.Default),
  Layer.provideMerge(MarketConfig.Default),
  Layer.provideMerge(Shutdown.Default)
)

/** The marketplace alone on the embedded defaults: `ctl market`. */
export const MarketLive = MarketServices.pipe(Layer.provideMerge(SqlWithSettingsLive))
