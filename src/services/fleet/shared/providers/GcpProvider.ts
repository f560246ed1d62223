import type { ProviderAdapter } from "./ProviderAdapter.js"

/** Google Compute Engine, where batch jobs run on preemptible GPU machines in the zones MACHINE_TYPE_ZONES lists. */
export const GcpProvider = {
  name: "gcp",
  title: "Google Compute Engine",
  diagnostics: [
    {
      id: "preemptible_gpu_quota",
      pattern: "Quota 'PREEMPTIBLE_NVIDIA_*_GPUS' exceeded",
      cause: "regional preemptible GPU quota hit",
      remedy: "raise the quota or add zones to MACHINE_TYPE_ZONES"
    }
  ]
} as const satisfies ProviderAdapter
