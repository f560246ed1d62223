import * as net from "node:net"
import { Effect } from "effect"

export interface TcpProxy {
  readonly port: number
  /** Cuts every connection through it (both ends reset) and refuses new ones until `up`: a network gone. */
  readonly down: () => void
  /** Refuses new connections until `up`, leaving the open ones be: a server that cannot be reached again. */
  readonly refuse: () => void
  /** Stops passing bytes on every connection through it, keeping them open: a network gone silent. */
  readonly mute: () => void
  /** Passes connections (and bytes) again. */
  readonly up: () => void
}

/**
 * A TCP proxy on 127.0.0.1 to `target`, for the scope: what a test puts between a client and its server to take
 * the network away from one connection (a listener) and not from another (a pool), and to give it back.
 */
export const tcpProxy = (target: { host: string; port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; server: net.Server; sockets: Set<net.Socket> }>((resume) => {
      const sockets = new Set<net.Socket>()
      let state: "up" | "down" | "refuse" | "mute" = "up"
      const server = net.createServer((client) => {
        if (state === "down" || state === "refuse") return void client.destroy()
        const upstream = net.connect(target.port, target.host)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
          socket.on("error", () => {})
        }
        const pass = (from: net.Socket, to: net.Socket) =>
          from.on("data", (chunk) => {
            if (state !== "mute") to.write(chunk)
          })
        pass(client, upstream)
        pass(upstream, client)
        client.on("close", () => upstream.destroy())
        upstream.on("close", () => client.destroy())
      })
      server.listen(0, "127.0.0.1", () => {
        const proxy: TcpProxy = {
          port: (server.address() as net.AddressInfo).port,
          down: () => {
            state = "down"
            for (const socket of sockets) socket.resetAndDestroy()
          },
          refuse: () => {
            state = "refuse"
          },
          mute: () => {
            state = "mute"
          },
          up: () => {
            state = "up"
          }
        }
        resume(Effect.succeed({ proxy, server, sockets }))
      })
    }),
    ({ server, sockets }) =>
      Effect.sync(() => {
        for (const socket of sockets) socket.destroy()
        server.close()
      })
  ).pipe(Effect.map(({ proxy }) => proxy))
