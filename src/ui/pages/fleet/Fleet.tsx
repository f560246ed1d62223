import { Effect } from "effect"
import { useEffect, useState } from "preact/hooks"
import type { FleetHostsReport } from "../../../contracts/fleet/FleetHosts.js"
import type { OverviewReport } from "../../../contracts/fleet/Overview.js"
import type { ReconcilerStatus } from "../../../contracts/fleet/Services.js"
import type { Refusal } from "../../lib/api.js"
import { useCredential } from "../../lib/Credential.js"
import { callControlPlane } from "../../lib/controlPlane.js"
import { PagedTable } from "../../lib/Paged.js"
import { Refused } from "../../lib/Refused.js"
import { VaultAccess } from "../../lib/VaultAccess.js"
import "./fleet.css"
import { age, field, gib, text } from "./format.js"

type Hosts = typeof FleetHostsReport.Type
type Overview = typeof OverviewReport.Type
type Reconciler = typeof ReconcilerStatus.Type
type FleetHost = Hosts["hosts"][number]
type OverviewHost = Extract<Overview["fleet"], { state: "available" }>["hosts"][number]

export const FLEET_WHY =
  "the control plane's fleet reads need a token whose grant holds fleet-read (for a host page, for that host), " +
  "of a consumer the registry lists under actions.fleet-read"

interface FleetData {
  readonly hosts: Hosts
  readonly overview: Overview
  readonly reconciler: Reconciler
}

/** The three fleet-wide reads, together: GET /api/fleet/hosts, /api/fleet/overview, /api/fleet/services/runs/latest. */
const readFleet = () =>
  callControlPlane((client) =>
    Effect.all(
      {
        hosts: client.fleet.hosts(),
        overview: client.fleet.overview(),
        reconciler: client.fleet.serviceRunsLatest()
      },
      { concurrency: "unbounded" }
    )
  )

export const Verdict = ({ claiming }: { claiming: { admits: boolean; reasons: ReadonlyArray<string> } | null }) =>
  claiming === null ? (
    <span class="muted" data-field="verdict">
      no verdict (incomplete evidence)
    </span>
  ) : (
    <span data-field="verdict">
      <strong class={claiming.admits ? "good" : "bad"}>{claiming.admits ? "admits work" : "does not admit"}</strong>
      {claiming.reasons.length > 0 && <span data-field="reasons">: {claiming.reasons.join("; ")}</span>}
    </span>
  )

const Beacon = ({ host, overview }: { host: FleetHost; overview: OverviewHost | undefined }) => {
  if (host.beacon.state === "absent") return <span class="muted">no beacon</span>
  if (host.beacon.state === "error") return <span class="bad">unreadable: {host.beacon.error}</span>
  const fresh = overview !== undefined && overview.beacon.state === "available" ? overview.beacon.fresh : null
  return (
    <span>
      <span class={fresh === false ? "bad" : fresh === true ? "good" : undefined} data-field="freshness">
        {fresh === true ? "fresh" : fresh === false ? "stale" : "unknown"}
      </span>
      , <span data-field="beacon-age">{age(host.beacon.age_seconds)}</span>
      <br />
      <span class="muted">{host.beacon.document.reported_at}</span>
    </span>
  )
}

/** Free space per filesystem, from the host's beacon (each mount as statfs read it, or why it could not). */
export const Disks = ({ host }: { host: FleetHost }) =>
  host.beacon.state !== "present" ? (
    <span class="muted">no beacon</span>
  ) : (
    <ul class="plain">
      {host.beacon.document.disks.map((disk) => (
        <li data-mount={disk.mount}>
          <code>{disk.mount}</code>{" "}
          {disk.error !== null ? (
            <span class="bad">{disk.error}</span>
          ) : (
            <span data-field="free">
              {gib(disk.available_bytes)} available of {gib(disk.total_bytes)}
            </span>
          )}
        </li>
      ))}
    </ul>
  )

const Publication = ({
  publication,
  read
}: {
  publication: FleetHost["janitor"]
  read: (document: unknown) => string
}) =>
  publication.state === "present" ? (
    <span>{read(publication.document)}</span>
  ) : publication.state === "absent" ? (
    <span class="muted">none published</span>
  ) : (
    <span class="bad">unreadable: {publication.error}</span>
  )

const janitorOutcome = (document: unknown) => text(field(document, "cleanup_state", "outcome"))
const capacityState = (document: unknown) =>
  `${text(field(document, "state"))}${field(document, "reason") ? ` — ${text(field(document, "reason"))}` : ""}`

const HostsTable = ({ data }: { data: FleetData }) => {
  const overviewHosts = data.overview.fleet.state === "available" ? data.overview.fleet.hosts : []
  return (
    <PagedTable
      items={data.hosts.hosts}
      size={10}
      label="hosts"
      head={
        <>
          <th>host</th>
          <th>beacon</th>
          <th>claiming verdict</th>
          <th>capacity publication</th>
          <th>janitor's last outcome</th>
          <th>free space per filesystem</th>
        </>
      }
      row={(host) => {
        const overview = overviewHosts.find((h) => h.host === host.name)
        return (
          <tr data-host={host.name}>
            <td>
              <a href={`/ui/fleet/${encodeURIComponent(host.name)}`}>{host.name}</a>
              <br />
              <span class="muted">
                {host.os}, {host.channel}
                {host.roles.length > 0 ? `, ${host.roles.join(" ")}` : ""}
              </span>
            </td>
            <td>
              <Beacon host={host} overview={overview} />
            </td>
            <td>
              {overview !== undefined && "claiming" in overview ? (
                <Verdict claiming={overview.claiming} />
              ) : (
                <span class="muted">unavailable</span>
              )}
            </td>
            <td data-field="capacity">
              <Publication publication={host.capacity} read={capacityState} />
            </td>
            <td data-field="janitor">
              <Publication publication={host.janitor} read={janitorOutcome} />
            </td>
            <td>
              <Disks host={host} />
            </td>
          </tr>
        )
      }}
    />
  )
}

const Queue = ({ overview }: { overview: Overview }) => (
  <section aria-labelledby="queue-heading">
    <h2 id="queue-heading">Job queue</h2>
    {overview.queue.state === "unavailable" ? (
      <p class="bad">unavailable: {overview.queue.error}</p>
    ) : (
      <>
        <p data-field="queue-paused">
          {overview.queue.paused ? <strong class="bad">paused</strong> : "not paused"}; oldest queued job:{" "}
          {overview.queue.oldest_queued_age_seconds === null ? "none" : age(overview.queue.oldest_queued_age_seconds)}
        </p>
        <table aria-label="jobs by state">
          <tbody>
            {Object.entries(overview.queue.counts).map(([state, count]) => (
              <tr data-state={state}>
                <th scope="row">{state}</th>
                <td class="num">{count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </>
    )}
    {overview.quota.state === "available" && (
      <div class="scroll">
        <table aria-label="slots">
          <thead>
            <tr>
              <th>host</th>
              <th class="num">running</th>
              <th class="num">slots</th>
            </tr>
          </thead>
          <tbody>
            {overview.quota.targets.map((target) => (
              <tr data-quota={target.host}>
                <td>{target.host}</td>
                <td class="num">{target.running}</td>
                <td class="num">{target.slots ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
)

const ReconcilerSection = ({ reconciler }: { reconciler: Reconciler }) => {
  const latest = reconciler.latest
  return (
    <section aria-labelledby="reconciler-heading">
      <h2 id="reconciler-heading">Reconciler</h2>
      <p>
        Mode <strong>{reconciler.mode}</strong>, a tick every {reconciler.interval_seconds} s, at most{" "}
        {reconciler.max_actions_per_tick} actions per tick;{" "}
        {reconciler.pause.paused ? (
          <strong class="bad">paused ({reconciler.pause.reason ?? "no reason given"})</strong>
        ) : (
          "not paused"
        )}
        .
        {reconciler.breakers.filter((b) => b.phase !== "closed").length > 0 && (
          <span class="bad">
            {" "}
            Open breakers:{" "}
            {reconciler.breakers
              .filter((b) => b.phase !== "closed")
              .map((b) => `${b.target} (${b.phase}: ${b.last_error ?? ""})`)
              .join("; ")}
          </span>
        )}
      </p>
      {latest === null ? (
        <p class="muted" data-field="latest-run">
          No reconciliation tick has run yet.
        </p>
      ) : (
        <>
          <p data-field="latest-run">
            Last report <code>{latest.run_id}</code> ({latest.trigger}, {latest.mode}), finished {latest.finished_at}:{" "}
            {latest.actions_executed} actions executed;{" "}
            {Object.entries(latest.counts)
              .map(([state, count]) => `${state} ${count}`)
              .join(", ")}
            .{latest.write_error !== null && <span class="bad"> Not written: {latest.write_error}</span>}
          </p>
          <h3>Alerts ({latest.alerts.length})</h3>
          {latest.alerts.length === 0 ? (
            <p class="muted">none in the last report</p>
          ) : (
            <PagedTable
              items={latest.alerts}
              size={10}
              label="alerts"
              head={
                <>
                  <th>kind</th>
                  <th>host</th>
                  <th>service</th>
                  <th>reason</th>
                </>
              }
              row={(alert) => (
                <tr data-alert={`${alert.target}/${alert.service}`}>
                  <td>{alert.kind}</td>
                  <td>{alert.target}</td>
                  <td>{alert.service}</td>
                  <td>{alert.reason}</td>
                </tr>
              )}
            />
          )}
          <p class="muted">
            Alert delivery: log {latest.alert_delivery.log_key ?? "none"}, webhook{" "}
            {typeof latest.alert_delivery.webhook === "string"
              ? latest.alert_delivery.webhook
              : `failed: ${latest.alert_delivery.webhook.failed}`}
          </p>
        </>
      )}
    </section>
  )
}

export const Fleet = () => {
  const token = useCredential("vault")
  const [data, setData] = useState<FleetData | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const [loading, setLoading] = useState(false)
  const load = async () => {
    setLoading(true)
    const read = await readFleet()
    setLoading(false)
    if (read.ok) {
      setData(read.value)
      setRefusal(undefined)
    } else {
      setData(undefined)
      setRefusal(read.refusal)
    }
  }
  useEffect(() => {
    setData(undefined)
    setRefusal(undefined)
    if (token !== undefined) void load()
  }, [token])
  return (
    <section class="fleet-page">
      <h1>Fleet</h1>
      <VaultAccess why={FLEET_WHY} />
      {token !== undefined && (
        <p>
          <button type="button" onClick={() => void load()} disabled={loading}>
            Read again
          </button>{" "}
          <span role="status" class="muted">
            {loading ? "reading…" : data !== undefined ? `read at ${data.hosts.generated_at}` : ""}
          </span>
        </p>
      )}
      {refusal !== undefined && <Refused refusal={refusal} />}
      {data !== undefined && (
        <>
          <p class="muted">
            Registry {data.hosts.registry.freshness}, digest <code>{data.hosts.registry.digest.slice(0, 12)}</code>
            {data.overview.fleet.state === "available" &&
              `; a beacon older than ${data.overview.fleet.host_silence_seconds} s is stale`}
            .
          </p>
          <h2>Hosts ({data.hosts.hosts.length})</h2>
          <HostsTable data={data} />
          <div class="grid two">
            <ReconcilerSection reconciler={data.reconciler} />
            <Queue overview={data.overview} />
          </div>
        </>
      )}
    </section>
  )
}
