// temporary diagnostic (deleted after): Keel trade cost in-process, without HTTP
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { Agents, ApiKeys, AppLive, Ledger, MarketAgent, ServicesLive, TokenMarket, Trading, UNIT, walletAccount, MarketConfig } from "keel"

const N = 3000
const mode = process.argv[2]
const wallets = Array.from({ length: 20 }, (_, i) => `0x${(0xbe7c4000 + i).toString(16).padStart(40, "0")}`)
const order = (i) => {
  const side = Math.floor(i / 20) % 2 === 0 ? "buy" : "sell"
  return { side, ticker: "BENCH", wallet: wallets[i % 20], amount: side === "buy" ? UNIT / 100n : 300_000n * UNIT, minimum: 0n }
}
const prog = Effect.gen(function* () {
  yield* (yield* Agents).create({ ticker: "BENCH", name: "Bench", description: "", burnRateHourly: 0n })
  const ledger = yield* Ledger
  for (const w of wallets) yield* ledger.mint(walletAccount(w), 1_000_000n * UNIT, "bench")
  const trading = yield* Trading
  const market = yield* TokenMarket
  const config = yield* MarketConfig
  for (const w of wallets) yield* trading.trade({ side: "buy", ticker: "BENCH", wallet: w, amount: UNIT / 10n, minimum: 0n })
  let run
  if (mode === "trading") run = (i) => trading.trade(order(i))
  else if (mode === "market") run = (i) => { const o = order(i); return o.side === "buy" ? market.buy("BENCH", walletAccount(o.wallet), o.amount, config.settings) : market.sell("BENCH", walletAccount(o.wallet), o.amount, config.settings) }
  else if (mode === "actor") { const client = yield* MarketAgent.client; run = (i) => client("BENCH").Trade(order(i)) }
  for (let i = 0; i < 500; i++) yield* run(i)
  const t0 = performance.now()
  if (mode === "actor-concurrent") {
  } else for (let i = 500; i < 500 + N; i++) yield* run(i)
  const ms = performance.now() - t0
  console.log(mode, (N / (ms / 1000)).toFixed(0), "trades/s", (ms / N).toFixed(3), "ms/trade")
})
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-diag-"))
process.env.KEEL_DATA_DIR = dir
await Effect.runPromise(prog.pipe(Effect.scoped, Effect.provide(mode === "actor" ? AppLive : ServicesLive)))
fs.rmSync(dir, { recursive: true, force: true })
