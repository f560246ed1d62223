import { originStripped } from "../services/platform/RequestTarget.js"

/**
 * The path a request is routed by, for comparing with route paths, read exactly as the router (find-my-way-ts,
 * `node_modules/find-my-way-ts/dist/esm/internal/router.js` `find`) reads it: a full URL in the request line
 * (`POST http://host/api/…`) loses its scheme and host; duplicate slashes are folded; the path ends at the
 * first `?`, `;` or `#`; it is decoded with `decodeURI` (so `%2F` stays a literal, never a separator); one
 * trailing slash is ignored; static segments match in any case. So `/API//tokens/X/buy/` reaches the same
 * route as `/api/tokens/X/buy`. Every check that decides by path (the marketplace gate's rate-limit class,
 * CORS routes, body limits) reads this, so it can never classify a request differently from the route that
 * answers it. Lower-cased: never for reading a parameter's value.
 */
export const routePath = (url: string): string => {
  let path = originStripped(url)
  path = path.replace(/\/\/+/g, "/")
  const end = path.slice(1).search(/[?;#]/)
  if (end >= 0) path = path.slice(0, end + 1)
  try {
    path = decodeURI(path)
  } catch {
    // Not valid percent-encoding: the router routes it nowhere (404); compared as sent.
  }
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  return path.toLowerCase()
}
