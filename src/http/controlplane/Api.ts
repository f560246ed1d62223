import { HttpApi, OpenApi } from "@effect/platform"

/** The fleet control plane: host-health beacons and the storage-root handoff (under /api). */
export class ControlPlaneApi extends HttpApi.make("controlplane")
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel fleet control plane")
  .annotate(OpenApi.Description, "Host-health beacons and the storage-root handoff saga.") {}
