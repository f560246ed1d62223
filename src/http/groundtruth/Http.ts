import { HttpApiBuilder } from "@effect/platform"
import { Health } from "../../services/platform/Health.js"
import { GroundTruthApi } from "./Api.js"

export const GroundTruthHealthLive = HttpApiBuilder.group(GroundTruthApi, "health", (handlers) =>
  handlers.handle("health", () => Health.use((health) => health.check))
)
