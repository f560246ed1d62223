import { HttpApi, OpenApi } from "@effect/platform"
import { problemOpenApi } from "../shared/ProblemContract.js"
import { FleetApi } from "./FleetApi.js"
import { HandoffQueueApi } from "./HandoffQueueApi.js"
import { HostHealthApi } from "./HostHealthApi.js"
import { JobsApi } from "./JobsApi.js"
import { ObjectsApi } from "./ObjectsApi.js"
import { StorageApi } from "./StorageApi.js"
import { WorkflowsApi } from "./WorkflowsApi.js"

/** The fleet control plane: host-health beacons, the object API, fleet reads, workflows, the handoff, jobs (under /api). */
export class ControlPlaneApi extends HttpApi.make("controlplane")
  .add(HostHealthApi)
  .add(ObjectsApi)
  .add(FleetApi)
  .add(WorkflowsApi)
  .add(StorageApi)
  .add(HandoffQueueApi)
  .add(JobsApi)
  .prefix("/api")
  .annotate(OpenApi.Title, "Keel fleet control plane")
  .annotate(OpenApi.Transform, problemOpenApi)
  .annotate(OpenApi.Description, "Host-health beacons and the storage-root handoff saga.") {}
