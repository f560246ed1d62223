import { GcpProvider } from "./GcpProvider.js"
import type { ProviderAdapter } from "./ProviderAdapter.js"

/** Every provider adapter Keel has; a registry profile enables some of them by name. */
export const ProviderAdapters = [GcpProvider] as const satisfies ReadonlyArray<ProviderAdapter>

export type ProviderName = (typeof ProviderAdapters)[number]["name"]

/** The adapters' names, for the registry's `profiles.<name>.providers`. */
export const ProviderNames = ProviderAdapters.map((adapter) => adapter.name) as unknown as readonly [
  ProviderName,
  ...Array<ProviderName>
]

/** The adapters `names` enable, in the order Keel lists them. */
export const adaptersNamed = (names: ReadonlyArray<string>): ReadonlyArray<ProviderAdapter> =>
  ProviderAdapters.filter((adapter) => names.includes(adapter.name))
