import { HttpApi, OpenApi } from "@effect/platform"

/** The agent marketplace: agents, tokens on bonding curves, platform coin, chat (under /api). */
export class MarketplaceApi extends HttpApi.make("marketplace")
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel agent marketplace")
  .annotate(OpenApi.Description, "Agents, tokens on bonding curves, the platform coin ledger and chat.") {}
