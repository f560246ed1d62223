import { Config, Effect, Layer } from "effect"
import { Launchd } from "./Launchd.js"
import { Supervisor } from "./Supervisor.js"
import { Systemd } from "./Systemd.js"

/**
 * This host's service manager: KEEL_SERVICE_MANAGER (`systemd`, `launchd`, `supervisor`), by default the
 * OS's own (launchd on macOS, systemd elsewhere).
 */
export const ServiceManagerLive = Layer.unwrapEffect(
  Effect.map(
    Config.literal(
      "systemd",
      "launchd",
      "supervisor"
    )("KEEL_SERVICE_MANAGER").pipe(
      Config.withDefault(process.platform === "darwin" ? ("launchd" as const) : ("systemd" as const)),
      Effect.orDie
    ),
    (manager) => (manager === "supervisor" ? Supervisor : manager === "launchd" ? Launchd : Systemd)
  )
)
