import { useEffect, useState } from "preact/hooks"

/** The page is the path under /ui (`/ui/market/SAGE`): links are real URLs, so reloads and shared links work. */
export const currentPath = () => window.location.pathname.replace(/^\/ui\/?/, "").replace(/\/+$/, "")

export const navigate = (to: string) => {
  window.history.pushState(null, "", `/ui/${to}`)
  window.dispatchEvent(new Event("keel-navigate"))
}

export const useRoute = () => {
  const [path, setPath] = useState(currentPath())
  useEffect(() => {
    const update = () => setPath(currentPath())
    window.addEventListener("popstate", update)
    window.addEventListener("keel-navigate", update)
    return () => {
      window.removeEventListener("popstate", update)
      window.removeEventListener("keel-navigate", update)
    }
  }, [])
  return path.split("/").filter((part) => part !== "")
}

/** A link inside the app: a real href (open in a new tab works), navigated without a reload on a plain click. */
export const onLink = (event: MouseEvent) => {
  const anchor = (event.target as HTMLElement).closest("a")
  if (anchor === null || event.defaultPrevented || event.button !== 0) return
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  const href = anchor.getAttribute("href") ?? ""
  if (!href.startsWith("/ui")) return
  event.preventDefault()
  navigate(href.replace(/^\/ui\/?/, ""))
}
