import type { ComponentType } from "preact"
import { ExperimentsPage } from "./experiments/Experiments.js"
import { GroundTruthPage } from "./groundtruth/GroundTruth.js"
import { MarketPage } from "./market/Market.js"

/** The pages by their first path segment under /ui; each page file adds itself here. */
export const pages: Record<string, ComponentType<{ readonly rest: ReadonlyArray<string> }>> = {
  market: MarketPage,
  groundtruth: GroundTruthPage,
  experiments: ExperimentsPage
}
