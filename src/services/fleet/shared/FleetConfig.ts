import * as path from "node:path"
import { Config, Duration, Effect } from "effect"
import { AppConfig, objectDirSetting, vaultKeyFileSetting } from "../../platform/AppConfig.js"
import { durationSetting } from "../../platform/DurationSetting.js"

/**
 * The fleet's settings (documented in docs/configuration.md), read once for every fleet service and command that
 * needs them instead of at each use. URLs stay as configured (`Option`): each caller keeps its own check of them
 * (https or loopback) and its own message when one is missing.
 */
export class FleetConfig extends Effect.Service<FleetConfig>()("fleet/FleetConfig", {
  effect: Effect.gen(function* () {
    const app = yield* AppConfig
    const remoteCtl = yield* Config.string("KEEL_REMOTE_CTL").pipe(Config.withDefault("ctl"))
    const knownHosts = yield* Config.option(Config.string("KEEL_SSH_KNOWN_HOSTS"))
    return {
      /** `ctl` on another host, as its host channel runs it (KEEL_REMOTE_CTL, default `ctl`): argv words. */
      remoteCtl: remoteCtl.split(" ").filter((part) => part.length > 0),
      /** known_hosts for ssh targets that name none (KEEL_SSH_KNOWN_HOSTS, default `<data dir>/known_hosts`). */
      knownHosts: knownHosts._tag === "Some" ? knownHosts.value : path.join(app.dataDir, "known_hosts"),
      /** The control plane this host reports to (KEEL_CONTROL_PLANE_URL); none: this process is it, or has none. */
      controlPlaneUrl: yield* Config.option(Config.string("KEEL_CONTROL_PLANE_URL")),
      /** Where grants are exchanged for tokens (KEEL_VAULT_URL); none: the control plane's own vault. */
      vaultUrl: yield* Config.option(Config.string("KEEL_VAULT_URL")),
      /** The fs object store's directory (KEEL_OBJECT_DIR): the janitor never cleans it. */
      objectDir: yield* objectDirSetting(app.dataDir),
      /** The vault's master-key file (KEEL_VAULT_KEY_FILE): the janitor never cleans it. */
      vaultKeyFile: yield* vaultKeyFileSetting(app.dataDir),
      /** How long a gates read (and each part of the overview) may take (KEEL_GATES_BUDGET, default 10 s). */
      gatesBudget: yield* durationSetting("KEEL_GATES_BUDGET").pipe(Config.withDefault(Duration.seconds(10))),
      /** How far ahead of this clock a beacon may be dated (KEEL_BEACON_MAX_SKEW, default 5 min). */
      beaconMaxSkew: yield* durationSetting("KEEL_BEACON_MAX_SKEW").pipe(Config.withDefault(Duration.minutes(5)))
    } as const
  })
}) {}
