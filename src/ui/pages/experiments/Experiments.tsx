import { useState } from "preact/hooks"
import { CredentialField } from "../../lib/Credential.js"
import { navigate } from "../../lib/route.js"
import { SiteAnalytics } from "./Analytics.js"
import { ExperimentReadout } from "./Readout.js"
import "./experiments.css"

/**
 * Experiments and analytics: /ui/experiments (the experiments and sites to open), /ui/experiments/ID (an
 * experiment's readout), /ui/experiments/analytics/SITE (a site's analytics). The product API lists neither
 * experiments nor sites, so this page names the demo registry's (examples/product-registry.yml) and opens any other
 * by its id.
 */

const DEMO_EXPERIMENTS: ReadonlyArray<readonly [id: string, where: string]> = [
  ["onboarding-headline-2026-11", "keel-demo-ios, onboarding (running)"],
  ["paywall-trial-length", "keel-demo-ios, paywall (paused)"],
  ["landing-hero", "keel-demo-web, landing (running)"]
]
const DEMO_SITES: ReadonlyArray<readonly [site: string, what: string]> = [
  ["keel-demo-web", "the demo web app (examples/web/index.html)"]
]

const OpenBy = ({ label, name, to }: { label: string; name: string; to: (value: string) => string }) => {
  const [value, setValue] = useState("")
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault()
        if (value.trim() !== "") navigate(to(encodeURIComponent(value.trim())))
      }}
    >
      <label>
        {label}
        <input name={name} value={value} onInput={(event) => setValue((event.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Open</button>
    </form>
  )
}

const Index = () => (
  <section>
    <h1>Experiments and analytics</h1>
    <div class="grid two-even">
      <section aria-labelledby="ex-list">
        <h2 id="ex-list">Experiments</h2>
        <p class="muted">The demo registry's experiments (the API has no list of them); any other by its id.</p>
        <ul class="cards one">
          {DEMO_EXPERIMENTS.map(([id, where]) => (
            <li>
              <a href={`/ui/experiments/${id}`}>{id}</a> <span class="muted">— {where}</span>
            </li>
          ))}
        </ul>
        <OpenBy label="Experiment id" name="experiment" to={(id) => `experiments/${id}`} />
      </section>
      <section aria-labelledby="site-list">
        <h2 id="site-list">Sites</h2>
        <p class="muted">The demo's analytics site; any other by its site id.</p>
        <ul class="cards one">
          {DEMO_SITES.map(([site, what]) => (
            <li>
              <a href={`/ui/experiments/analytics/${site}`}>{site}</a> <span class="muted">— {what}</span>
            </li>
          ))}
        </ul>
        <OpenBy label="Site id" name="site" to={(site) => `experiments/analytics/${site}`} />
      </section>
    </div>
  </section>
)

export const ExperimentsPage = ({ rest }: { readonly rest: ReadonlyArray<string> }) => {
  const [first, second] = rest.map((part) => decodeURIComponent(part))
  return (
    <>
      <CredentialField kind="admin" why="the experiment readout and the site analytics need one of KEEL_ADMIN_TOKENS" />
      {first === undefined ? (
        <Index />
      ) : first === "analytics" && second !== undefined ? (
        <SiteAnalytics site={second} />
      ) : (
        <ExperimentReadout id={first} />
      )}
    </>
  )
}
