import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as YAML from "yaml"

export const CLIENT_KEY = "pk_test_ios_0123456789"

export const registryDoc = (
  overrides: { weights?: [number, number]; traffic?: number; status?: string; kill?: boolean } = {}
) => ({
  apps: [
    {
      app_id: "demo-ios",
      client_keys: [CLIENT_KEY, "pk_test_ios_rotated_key"],
      journeys: [
        {
          platform: "ios",
          surface: "onboarding",
          experiment: {
            id: "onboarding-copy",
            status: overrides.status ?? "running",
            kill_switch: overrides.kill ?? false,
            traffic: overrides.traffic ?? 1,
            variants: [
              { name: "control", weight: overrides.weights?.[0] ?? 0.5, config: { headline: "Welcome" } },
              { name: "bold", weight: overrides.weights?.[1] ?? 0.5, config: { headline: "Let's go", cta: "Start" } }
            ]
          }
        },
        { platform: "ios", surface: "paywall" },
        {
          platform: "android",
          surface: "onboarding",
          experiment: {
            id: "onboarding-android",
            status: "running",
            variants: [{ name: "only", weight: 1, config: { color: "green" } }]
          }
        }
      ]
    }
  ]
})

/** A data dir holding product-registry.yml; `write` replaces the file as an editor would. */
export const registryDir = (doc: unknown = registryDoc()) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keel-product-"))
  const file = path.join(dir, "product-registry.yml")
  const write = (next: unknown) => {
    const tmp = `${file}.tmp`
    fs.writeFileSync(tmp, typeof next === "string" ? next : YAML.stringify(next))
    fs.renameSync(tmp, file)
  }
  write(doc)
  return { dir, file, write }
}
