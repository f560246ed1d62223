// The @effect/platform floor: the same constant JSON from a bare HttpRouter on NodeHttpServer, with no
// middleware, no HttpApi, no services and no spans. What any route served by the Effect HTTP stack
// costs at the least, before it does anything.
import { createServer } from "node:http"
import { HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"

const ok = HttpServerResponse.unsafeJson({ status: "ok" })
const app = HttpRouter.empty.pipe(HttpRouter.get("/api/health", ok), HttpRouter.get("/constant", ok))
const port = Number(process.env.BENCH_PORT)
Layer.launch(
  HttpServer.serve(app, (a) => a).pipe(Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })))
).pipe(Effect.withTracerEnabled(false), NodeRuntime.runMain({ disableErrorReporting: true }))
