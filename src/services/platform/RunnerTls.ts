import type * as Net from "node:net"
import * as tls from "node:tls"
import { type RunnerAddress, Runners } from "@effect/cluster"
import { Socket, SocketServer } from "@effect/platform"
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { Deferred, Effect, Exit, FiberSet, Layer, Redacted, Runtime, Scope } from "effect"
import type { HostPort } from "./ClusterConfig.js"
import type { RunnerTls } from "./RunnerTlsFiles.js"

/*
 * The runner port over mutual TLS (docs/cluster.md, "Security of the runner port"): the same socket transport as
 * @effect/platform-node's NodeClusterSocket (`layerSocketServer`, `layerClientProtocol`), with node:tls under it.
 * platform-node-shared's `NodeSocketServer.make` creates its own `net.Server` and `NodeSocket.makeNet` its own
 * `net.Socket`, so both ends are rebuilt here around its `NodeSocket.fromDuplex`, which takes any duplex: a
 * `TLSSocket` once its handshake is done.
 *
 * Who is a runner: whoever holds a certificate signed by the shared CA, checked by both ends of every connection
 * (the server asks for the client's and refuses a connection without one; the client checks the server's chain).
 * Host names are not checked: every runner may already send any actor any message, so one runner answering at
 * another's address gains nothing it did not have, and certificates need not follow addresses that change. The CA
 * must therefore sign runner certificates only (docs/cluster.md says how to make one).
 */

/** Both ends are Keel runners of one version on Node 20: nothing older than TLS 1.3 needs to be spoken. */
const MIN_VERSION = "TLSv1.3" as const

/**
 * How long a dial may take to connect and finish its handshake. platform-node allows a plain connect 1 s; a
 * handshake adds a round trip and two signatures, which a loaded 2-core machine can stretch.
 */
const OPEN_TIMEOUT = "2 seconds"

/** A connection to another runner's port, open once the handshake has checked its certificate. */
const dial = (address: RunnerAddress.RunnerAddress, context: tls.SecureContext) =>
  NodeSocket.fromDuplex(
    Effect.scopeWith((scope) => {
      let conn: tls.TLSSocket | undefined
      return Effect.flatMap(
        // Closed with the protocol's scope, and destroyed when the open times out.
        Scope.addFinalizer(
          scope,
          Effect.sync(() => {
            if (conn !== undefined && !conn.closed) conn.destroySoon()
          })
        ),
        () =>
          Effect.async<tls.TLSSocket, Socket.SocketError>((resume) => {
            conn = tls.connect({
              host: address.host,
              port: address.port,
              secureContext: context,
              minVersion: MIN_VERSION,
              // The chain is still checked (rejectUnauthorized defaults to true); the host name is not (above).
              checkServerIdentity: () => undefined
            })
            conn.once("secureConnect", () => resume(Effect.succeed(conn!)))
            // Kept for the socket's life: fromDuplex adds its own once open, and an error event without a listener
            // would end the process. After the open has resumed, a second resume is ignored.
            conn.on("error", (cause) => resume(Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause }))))
          })
      )
    }),
    { openTimeout: OPEN_TIMEOUT }
  )

/** `Runners.RpcClientProtocol` over TLS: how this runner (and its health check) reaches the others. */
export const layerTlsClientProtocol = (material: RunnerTls) =>
  Layer.effect(
    Runners.RpcClientProtocol,
    Effect.gen(function* () {
      const serialization = yield* RpcSerialization.RpcSerialization
      // One context for every connection: the CA store and this runner's certificate and key, parsed once.
      const context = tls.createSecureContext({
        ca: material.ca,
        cert: material.cert,
        key: Redacted.value(material.key),
        minVersion: MIN_VERSION
      })
      return Effect.fnUntraced(function* (address: RunnerAddress.RunnerAddress) {
        const socket = yield* dial(address, context)
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket.Socket, socket),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        )
      }, Effect.orDie)
    })
  )

/**
 * Why a connection was refused, from what node:tls reports: the certificate check's verdict when the handshake
 * completed without a good certificate (the server then closes it without an alert, hence ECONNRESET), else the
 * handshake's error code (ERR_SSL_WRONG_VERSION_NUMBER: not TLS at all; ERR_SSL_PEER_DID_NOT_RETURN_A_CERTIFICATE).
 */
const refusalReason = (error: Error & { readonly code?: string }, socket: tls.TLSSocket) =>
  String(socket.authorizationError ?? error.code ?? error.message)

/**
 * A `SocketServer` on `listen` that hands the runner server only connections whose client presented a certificate
 * of the shared CA. A refused connection is closed by node:tls and logged (a warning: something reached the port
 * without a runner's certificate); it never reaches the cluster.
 */
export const makeTlsSocketServer = (listen: HostPort, material: RunnerTls) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const failed = yield* Deferred.make<never, Error>()
    // Connections made before the runner server runs wait here, as in NodeSocketServer.
    const pending: Array<tls.TLSSocket> = []
    // A connection's error (a peer resetting), noted from the moment it is accepted: an error event without a
    // listener would end the process, and one that came before the connection is served fails its open.
    const errors = new WeakMap<tls.TLSSocket, Error>()
    let onConnection = (conn: tls.TLSSocket) => {
      pending.push(conn)
    }
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        tls.createServer(
          {
            ca: material.ca,
            cert: material.cert,
            key: Redacted.value(material.key),
            requestCert: true,
            rejectUnauthorized: true,
            minVersion: MIN_VERSION,
            // A runner finishes its handshake in milliseconds; a connection that does not is not one (node's
            // default would let it hold a socket for two minutes).
            handshakeTimeout: 10_000
          },
          (conn) => {
            conn.on("error", (cause) => errors.set(conn, cause))
            onConnection(conn)
          }
        )
      ),
      (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
    )
    server.on("error", (cause) => Deferred.unsafeDone(failed, Exit.fail(cause)))
    // Who knocked: a connection refused for its certificate is already destroyed when node:tls reports it, and its
    // address gone with it; so each TCP connection's address is noted when it arrives, under the plain socket node:tls
    // wraps (its `_parent`, not a documented field: without it the log says "unknown").
    const remotes = new WeakMap<object, string>()
    server.on("connection", (raw: Net.Socket) => remotes.set(raw, `${raw.remoteAddress}:${raw.remotePort}`))
    server.on("tlsClientError", (error, socket) => {
      const raw = (socket as unknown as { readonly _parent?: object })._parent
      Runtime.runFork(runtime)(
        Effect.logWarning("runner port: connection refused").pipe(
          Effect.annotateLogs({
            remote: (raw === undefined ? undefined : remotes.get(raw)) ?? "unknown",
            reason: refusalReason(error, socket)
          })
        )
      )
    })
    yield* Effect.async<void>((resume) => {
      server.listen({ host: listen.host, port: listen.port }, () => resume(Effect.void))
    }).pipe(
      Effect.raceFirst(
        Effect.mapError(
          Deferred.await(failed),
          (cause) => new SocketServer.SocketServerError({ reason: "Open", cause })
        )
      )
    )

    const run = <R, E, _>(handler: (socket: Socket.Socket) => Effect.Effect<_, E, R>) =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const fibers = yield* FiberSet.make().pipe(Scope.extend(scope))
        const fork = yield* FiberSet.runtime(fibers)<R>()
        const serve = (conn: tls.TLSSocket) => {
          const open = Effect.acquireRelease(
            Effect.suspend(
              (): Effect.Effect<tls.TLSSocket, Socket.SocketError> =>
                errors.has(conn)
                  ? Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause: errors.get(conn) }))
                  : conn.closed
                    ? Effect.fail(new Socket.SocketCloseError({ reason: "Close", code: 1000 }))
                    : Effect.succeed(conn)
            ),
            (conn) =>
              Effect.sync(() => {
                if (!conn.closed) conn.destroySoon()
              })
          )
          fork(
            NodeSocket.fromDuplex(open).pipe(
              Effect.flatMap(handler),
              Effect.catchAllCause((cause) => Effect.logDebug("runner port: connection ended", cause)),
              Effect.provideService(NodeSocket.NetSocket, conn as Net.Socket)
            )
          )
        }
        return yield* Effect.async<never>(() => {
          const before = onConnection
          onConnection = serve
          for (const conn of pending.splice(0)) serve(conn)
          return Effect.suspend(() => {
            onConnection = before
            return Scope.close(scope, Exit.void)
          })
        }).pipe(
          Effect.raceFirst(
            Effect.mapError(
              Deferred.await(failed),
              (cause) => new SocketServer.SocketServerError({ reason: "Unknown", cause })
            )
          )
        )
      })

    const address = server.address() as Net.AddressInfo
    return SocketServer.SocketServer.of({
      address: { _tag: "TcpAddress", hostname: address.address, port: address.port },
      run
    })
  })

/** `SocketServer` for the runner over mutual TLS, in place of NodeClusterSocket's `layerSocketServer`. */
export const layerTlsSocketServer = (listen: HostPort, material: RunnerTls) =>
  Layer.scoped(SocketServer.SocketServer, makeTlsSocketServer(listen, material))
