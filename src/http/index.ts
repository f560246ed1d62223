/**
 * `Http` in the package entry: the server's shared HTTP pieces an embedder mounts or reads — the surface names
 * and table, the problem-details encoding and the client-error shape. The server layer itself is `Layers.httpServer`.
 */
export * from "./ClientError.js"
export * from "./Problem.js"
export * from "./SurfaceNames.js"
export * from "./Surfaces.js"
