/**
 * The path a request is routed by, for comparing with route paths: the router (find-my-way) cuts the path at
 * `?` and `;`, percent-decodes it, folds duplicate slashes, ignores a trailing slash and matches static
 * segments in any case, so `/API//tokens/X/buy/` reaches the same route as `/api/tokens/X/buy`. Every check
 * that decides by path (the marketplace gate's rate-limit class, CORS routes, body limits) reads this, so it
 * can never classify a request differently from the route that answers it. Lower-cased: never for reading
 * a parameter's value.
 */
export const routePath = (url: string): string => {
  const end = url.search(/[?;#]/)
  let path = end < 0 ? url : url.slice(0, end)
  try {
    path = decodeURIComponent(path)
  } catch {
    // Not valid percent-encoding: compared as sent (the router does not route it either).
  }
  path = path.replace(/\/{2,}/g, "/")
  if (path.length > 1) path = path.replace(/\/+$/, "")
  return path.toLowerCase()
}
