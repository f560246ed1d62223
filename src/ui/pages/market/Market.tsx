import { TokenList } from "./TokenList.js"
import { TokenPage } from "./TokenPage.js"
import "./market.css"

/** /ui/market (the token list) and /ui/market/TICKER (a token's page); docs/dashboard.md "Market". */
export const MarketPage = ({ rest }: { readonly rest: ReadonlyArray<string> }) => {
  const ticker = rest[0]?.toUpperCase()
  return ticker === undefined ? <TokenList /> : <TokenPage ticker={ticker} />
}
