// Setup for the market bench on Keel's side, through the built library (what `ctl market agent create`,
// `ctl market keys create` and `ctl market coin mint` do, in one process instead of 1 + 2×N CLI starts):
// launches the BENCH agent (or one agent per ticker of `tickers`, bench/cluster.mjs), then for each wallet of
// BENCH_SETUP creates its API key and mints its coin. Writes { ticker, tickers, wallets: [{ address, key }] } to
// BENCH_SETUP_OUT. Uses KEEL_DATA_DIR (and KEEL_DATABASE_URL) like the CLI.
import * as fs from "node:fs"
import { Effect } from "effect"
import { ServicesLive } from "keel/layers"
import { Agents, ApiKeys, Ledger, UNIT, walletAccount } from "keel/market"

const { ticker, tickers = [ticker], wallets, mint } = JSON.parse(fs.readFileSync(process.env.BENCH_SETUP, "utf8"))

const setup = Effect.gen(function* () {
  const agents = yield* Agents
  const keys = yield* ApiKeys
  const ledger = yield* Ledger
  for (const t of tickers) yield* agents.create({ ticker: t, name: "Bench", description: "", burnRateHourly: 0n })
  const out = []
  for (const address of wallets) {
    const { key } = yield* keys.create({ wallet: address })
    yield* ledger.mint(walletAccount(address), BigInt(mint) * UNIT, "bench")
    out.push({ address, key })
  }
  return { ticker, tickers, wallets: out }
})

const result = await Effect.runPromise(setup.pipe(Effect.provide(ServicesLive)))
fs.writeFileSync(process.env.BENCH_SETUP_OUT, JSON.stringify(result))
