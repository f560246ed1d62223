import type { ComponentType } from "preact"
import { onLink, useRoute } from "./lib/route.js"
import { Home } from "./pages/Home.js"
import { pages } from "./pages/index.js"

const NAV: ReadonlyArray<readonly [string, string]> = [
  ["market", "Market"],
  ["fleet", "Fleet"],
  ["handoff", "Handoff"],
  ["groundtruth", "Ground truth"],
  ["experiments", "Experiments"]
]

export const App = () => {
  const [page = "", ...rest] = useRoute()
  const Page: ComponentType<{ readonly rest: ReadonlyArray<string> }> | undefined =
    page === "" ? Home : pages[page as keyof typeof pages]
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: one delegated handler for the app's links (each an <a>)
    // biome-ignore lint/a11y/useKeyWithClickEvents: the links themselves take the keyboard
    <div class="app" onClick={(event) => onLink(event as unknown as MouseEvent)}>
      <header>
        <a class="brand" href="/ui">
          Keel
        </a>
        <nav aria-label="pages">
          {NAV.map(([path, name]) => (
            <a href={`/ui/${path}`} aria-current={page === path ? "page" : undefined}>
              {name}
            </a>
          ))}
        </nav>
      </header>
      <main>{Page === undefined ? <p>No page {page} here.</p> : <Page rest={rest} />}</main>
    </div>
  )
}
