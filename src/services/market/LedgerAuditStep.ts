import { Effect } from "effect"
import type { ImportStep } from "../platform/DatabaseTransfer.js"
import { Ledger } from "./Ledger.js"
import { unitsText } from "./Units.js"

/**
 * After `ctl db import`: the ledger's audit (`ctl market audit`) on the imported rows, inside the import's
 * transaction; a ledger that does not balance rolls the import back.
 */
export const ledgerAuditStep = Effect.map(
  Ledger,
  (ledger) =>
    ({
      name: "market ledger audit",
      run: Effect.map(ledger.audit(), (report) => ({
        ok: report.ok,
        summary: report.ok
          ? `ledger consistent: ${report.entries} entries, coin supply ${unitsText(report.coinSupply)}`
          : `ledger INCONSISTENT: ${report.problems.length} problem(s)`,
        problems: report.problems
      }))
    }) satisfies ImportStep
)
