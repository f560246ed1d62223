// The @effect/platform floor: the same constant JSON from a bare HttpRouter on NodeHttpServer, with no
// middleware, no HttpApi, no services and no spans. What any route served by the Effect HTTP stack
// costs at the least, before it does anything.
import { createServer } from "node:http"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"

const ok = HttpServerResponse.unsafeJson({ status: "ok" })
// The hot routes' floors (bench:market, bench:product): the same methods and paths, the body read, a constant
// answer of the same shape.
const receipt = HttpServerResponse.unsafeJson({
  success: true,
  tokens_received: 1,
  price_per_token: 1,
  fee: 0.001,
  coin_spent: 0.01,
  partial: false,
  new_balance: 1
})
const readBody = (answer) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Effect.as(Effect.orDie(request.text), answer))
const app = HttpRouter.empty.pipe(
  HttpRouter.get("/api/health", ok),
  HttpRouter.get("/constant", ok),
  HttpRouter.post("/api/tokens/:ticker/:side", readBody(receipt)),
  HttpRouter.get(
    "/api/experiments/assign",
    HttpServerResponse.unsafeJson({ variant: null, config: {}, experimentId: null })
  ),
  HttpRouter.post(
    "/api/analytics/web/collect",
    readBody(HttpServerResponse.unsafeJson({ accepted: 50, duplicates: 0, rejected: [] }, { status: 202 }))
  )
)
const port = Number(process.env.BENCH_PORT)
Layer.launch(
  HttpServer.serve(app, (a) => a).pipe(Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })))
).pipe(Effect.withTracerEnabled(false), NodeRuntime.runMain({ disableErrorReporting: true }))
