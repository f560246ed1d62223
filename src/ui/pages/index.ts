import type { ComponentType } from "preact"
import { ExperimentsPage } from "./experiments/Experiments.js"
import { FleetPage } from "./fleet/FleetPage.js"
import { GroundTruthPage } from "./groundtruth/GroundTruth.js"
import { HandoffPage } from "./handoff/Handoff.js"
import { MarketPage } from "./market/Market.js"

/** The pages by their first path segment under /ui; each page file adds itself here. */
export const pages: Record<string, ComponentType<{ readonly rest: ReadonlyArray<string> }>> = {
  fleet: FleetPage,
  handoff: HandoffPage,
  market: MarketPage,
  groundtruth: GroundTruthPage,
  experiments: ExperimentsPage
}
