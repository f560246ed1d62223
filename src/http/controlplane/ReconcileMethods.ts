import { HttpLayerRouter } from "@effect/platform"
import { Layer } from "effect"
import { problemResponse } from "../Problem.js"

const RECONCILE_PATH = "/api/host/storage-root-reconcile"

/**
 * The reconcile path has GET (phase=status) and POST (the other phases). Any other method is a wrong method for
 * every phase, which the seed answers 400 (not the router's 404 for a path it does not know, nor 405), with
 * `Allow` naming the two it has. No credential is needed to learn that: the methods are in the OpenAPI document.
 */
const wrongMethod = (method: "PUT" | "PATCH" | "DELETE") =>
  HttpLayerRouter.add(
    method,
    RECONCILE_PATH,
    problemResponse(
      400,
      "INVALID_RECONCILE_REQUEST",
      `${method} is not a method of the reconcile path: GET with phase=status, POST with phase=run, resume, rollback or finalize`,
      { headers: { allow: "GET, POST" } }
    )
  )

export const ReconcileWrongMethodsLive = Layer.mergeAll(wrongMethod("PUT"), wrongMethod("PATCH"), wrongMethod("DELETE"))
