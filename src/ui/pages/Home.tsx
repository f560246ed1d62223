/** The landing page: what each page shows and which credential it reads with (docs/dashboard.md). */
export const Home = () => (
  <section>
    <h1>Keel</h1>
    <ul class="cards">
      <li>
        <a href="/ui/market">Market</a> — tokens, prices, charts, chat; trading with an API key.
      </li>
      <li>
        <a href="/ui/fleet">Fleet</a> — hosts, beacons, gates, janitor, reconciler, jobs; a vault token.
      </li>
      <li>
        <a href="/ui/handoff">Handoff sheet</a> — a storage-root handoff, phase by phase; a vault token.
      </li>
      <li>
        <a href="/ui/groundtruth">Ground truth</a> — search and ask with line-exact citations.
      </li>
      <li>
        <a href="/ui/experiments">Experiments and analytics</a> — readouts; an admin token.
      </li>
    </ul>
  </section>
)
