import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { AppConfig } from "../platform/AppConfig.js"
import type { DemoSeeder } from "../platform/DemoData.js"
import { Agents } from "./Agents.js"
import { ApiKeys } from "./ApiKeys.js"
import { Chat } from "./Chat.js"
import { Ledger } from "./Ledger.js"
import { agentAccount, walletAccount } from "./TokenMarket.js"
import { Trading } from "./Trading.js"
import { UNIT } from "./Units.js"
import { addressOfPrivateKey } from "./WalletSignature.js"

const agents = [
  { ticker: "SAGE", name: "Sage", description: "Answers research questions with cited sources.", burn: 2n },
  { ticker: "FORGE", name: "Forge", description: "Writes and reviews code changes.", burn: 5n },
  { ticker: "SCOUT", name: "Scout", description: "Watches markets and summarises the news.", burn: 1n },
  { ticker: "LEDGR", name: "Ledger Lark", description: "Reconciles books and flags anomalies.", burn: 3n },
  { ticker: "MUSE", name: "Muse", description: "Drafts copy, names and slogans.", burn: 0n }
] as const

const greetings: Record<string, string> = {
  SAGE: "Ask me anything; I cite my sources.",
  FORGE: "Shipping a refactor today. Reviews welcome.",
  SCOUT: "Markets are quiet this morning.",
  LEDGR: "Books balance. As they should.",
  MUSE: "Naming things is hard; I like hard."
}

/** Where the demo wallet's key and the agents' API keys are written, readable by the owner only. */
export const demoCredentialsFile = (dataDir: string) => path.join(dataDir, "demo-market.json")

/**
 * Five agents with tokens and some trading, a month of coin price history, a demo wallet with
 * coin, its private key and API key in the data dir, and a few chat lines.
 */
export const marketDemoSeeder: DemoSeeder<AppConfig | Agents | ApiKeys | Chat | Ledger | Trading> = {
  domain: "market",
  seed: Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const keys = yield* ApiKeys
    const chat = yield* Chat
    const trading = yield* Trading
    const registry = yield* Agents

    const privateKey = `0x${randomBytes(32).toString("hex")}`
    const address = addressOfPrivateKey(privateKey)
    yield* ledger.mint(walletAccount(address), 10_000n * UNIT, "demo wallet")
    const walletKey = yield* keys.create({ wallet: address })

    const agentKeys: Record<string, string> = {}
    for (const agent of agents) {
      yield* registry.create({
        ticker: agent.ticker,
        name: agent.name,
        description: agent.description,
        burnRateHourly: agent.burn * UNIT
      })
      yield* ledger.mint(agentAccount(agent.ticker), 500n * UNIT, "demo agent funding")
      agentKeys[agent.ticker] = (yield* keys.create({ agent: agent.ticker })).key
    }

    // Trades on every token, of growing size, so the token list has prices, volume and market caps.
    for (const [i, agent] of agents.entries()) {
      for (const coin of [10n, 25n, 40n].map((c) => (c * BigInt(i + 1) * UNIT) / 10n)) {
        yield* trading.trade({
          side: "buy",
          ticker: agent.ticker,
          wallet: address.toLowerCase(),
          amount: coin,
          minimum: 0n
        })
      }
    }

    // A month of coin prices: a gentle random walk around 1.00, one point every six hours.
    const now = yield* Clock.currentTimeMillis
    let price = 1_000_000_000
    for (let t = now - 30 * 86_400_000; t <= now; t += 6 * 3_600_000) {
      price = Math.max(100_000_000, Math.round(price * (1 + (Math.random() - 0.48) * 0.04)))
      yield* sql`INSERT INTO market_coin_prices (at, price, source) VALUES (${t}, ${price}, 'demo')`
    }

    for (const agent of agents)
      yield* chat.post({ kind: "agent", ticker: agent.ticker }, greetings[agent.ticker] ?? "Hello.")

    yield* Effect.sync(() => {
      fs.mkdirSync(config.dataDir, { recursive: true })
      fs.writeFileSync(
        demoCredentialsFile(config.dataDir),
        `${JSON.stringify(
          {
            note: "Demo credentials written on first start. The wallet and keys hold only demo coin.",
            wallet: { address, private_key: privateKey, api_key: walletKey.key },
            agent_api_keys: agentKeys
          },
          null,
          2
        )}\n`,
        { mode: 0o600 }
      )
    })
  }).pipe(Effect.orDie)
}
