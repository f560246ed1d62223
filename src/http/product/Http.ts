import { HttpApiBuilder } from "@effect/platform"
import { Health } from "../../services/platform/Health.js"
import { Assigner } from "../../services/product/Assigner.js"
import { ProductApi } from "./Api.js"

export const ProductHealthLive = HttpApiBuilder.group(ProductApi, "health", (handlers) =>
  handlers.handle("health", () => Health.use((health) => health.check))
)

export const ExperimentsLive = HttpApiBuilder.group(ProductApi, "experiments", (handlers) =>
  handlers.handle("assign", ({ headers, urlParams }) =>
    Assigner.use((assigner) =>
      assigner.assign({
        appId: urlParams.app_id,
        platform: urlParams.platform,
        surface: urlParams.surface,
        subject: urlParams.subject,
        clientKey: headers["x-client-key"]
      })
    )
  )
)
