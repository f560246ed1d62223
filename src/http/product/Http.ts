import { HttpApiBuilder } from "@effect/platform"
import { Health } from "../../services/platform/Health.js"
import { ProductApi } from "./Api.js"

export const ProductHealthLive = HttpApiBuilder.group(ProductApi, "health", (handlers) =>
  handlers.handle("health", () => Health.use((health) => health.check))
)
