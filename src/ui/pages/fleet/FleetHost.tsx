import { Effect } from "effect"
import { useEffect, useState } from "preact/hooks"
import type { FleetHostsReport } from "../../../contracts/fleet/FleetHosts.js"
import type { GatesReport } from "../../../contracts/fleet/Gates.js"
import type { JobView } from "../../../contracts/fleet/Jobs.js"
import type { ServiceListing } from "../../../contracts/fleet/Services.js"
import type { Refusal } from "../../lib/api.js"
import { useCredential } from "../../lib/Credential.js"
import { callControlPlane } from "../../lib/controlPlane.js"
import { PagedTable } from "../../lib/Paged.js"
import { Refused } from "../../lib/Refused.js"
import { VaultAccess } from "../../lib/VaultAccess.js"
import { Disks, FLEET_WHY, Verdict } from "./Fleet.js"
import { age, gib } from "./format.js"

type FleetHost = (typeof FleetHostsReport.Type)["hosts"][number]
type Services = (typeof ServiceListing.Type)["services"]

interface HostData {
  readonly gates: GatesReport
  readonly host: FleetHost | undefined
  readonly services: Services
}

/** GET /api/fleet/gates/HOST (read on the host), and the host's beacon and declared services from the fleet reads. */
const readHost = (name: string) =>
  callControlPlane((client) =>
    Effect.all(
      {
        gates: client.fleet.gates({ path: { host: name } }),
        hosts: client.fleet.hosts(),
        services: client.fleet.services()
      },
      { concurrency: "unbounded" }
    ).pipe(
      Effect.map(({ gates, hosts, services }) => ({
        gates,
        host: hosts.hosts.find((host) => host.name === name),
        services: services.services.filter((service) => service.target === name)
      }))
    )
  )

const Gates = ({ gates }: { gates: GatesReport }) => (
  <section aria-labelledby="gates-heading">
    <h2 id="gates-heading">Gates</h2>
    <dl class="facts">
      <dt>verdict</dt>
      <dd>
        <Verdict claiming={gates.claiming} />
        {!gates.complete && <span class="warning-inline"> (the report is incomplete: a read did not finish)</span>}
      </dd>
      <dt>disk</dt>
      <dd data-field="gates-disk">
        {gates.disk.mount ?? "no mount read"}: {gates.disk.free_gb === null ? "unknown" : `${gates.disk.free_gb} GiB`}{" "}
        free, watermark {gates.disk.low_free_gb === null ? "none" : `${gates.disk.low_free_gb} GiB`}
        {gates.below_watermark === true && <strong class="bad"> below the watermark</strong>} (from{" "}
        {gates.pressure_source.replaceAll("_", " ")})
      </dd>
      <dt>capacity diagnostics</dt>
      <dd>
        {gates.capacity.diagnostics === null
          ? "none published"
          : `${gates.capacity.diagnostics.state}: ${gates.capacity.diagnostics.reason}`}
      </dd>
      <dt>beacon</dt>
      <dd data-field="gates-beacon">
        {gates.beacon.fresh === null ? "unknown" : gates.beacon.fresh ? "fresh" : "stale"},{" "}
        {age(gates.beacon.age_seconds)}
      </dd>
      <dt>queue</dt>
      <dd>
        {gates.queue === null
          ? "unread"
          : `${gates.queue.paused ? "paused" : "not paused"}; ${Object.entries(gates.queue.counts)
              .map(([state, count]) => `${state} ${count}`)
              .join(", ")}`}
      </dd>
    </dl>
    <h3>Observations ({gates.observations.length})</h3>
    <PagedTable
      items={gates.observations}
      size={10}
      label="observations"
      head={
        <>
          <th>operation</th>
          <th>source</th>
          <th>state</th>
          <th class="num">elapsed / budget</th>
          <th>error</th>
        </>
      }
      row={(o) => (
        <tr data-observation={o.source}>
          <td>{o.operation}</td>
          <td>
            <code>{o.source}</code>
          </td>
          <td data-field="state" class={o.state === "error" || o.state === "timed_out" ? "bad" : undefined}>
            {o.state}
          </td>
          <td class="num">
            {o.elapsed_ms ?? "—"} / {o.budget_ms} ms
          </td>
          <td>{o.error ?? ""}</td>
        </tr>
      )}
    />
  </section>
)

const Units = ({ host, services }: { host: FleetHost | undefined; services: Services }) => {
  const units = host?.beacon.state === "present" ? host.beacon.document.units : []
  return (
    <section aria-labelledby="units-heading">
      <h2 id="units-heading">Units</h2>
      <h3>In the beacon ({units.length})</h3>
      {host?.beacon.state !== "present" ? (
        <p class="muted">No beacon: the host has published no unit states.</p>
      ) : (
        <PagedTable
          items={units}
          size={10}
          label="beacon units"
          head={
            <>
              <th>name</th>
              <th>manager</th>
              <th>state</th>
              <th class="num">pid</th>
              <th>error</th>
            </>
          }
          row={(unit) => (
            <tr data-unit={unit.name}>
              <td>
                {unit.name}
                <br />
                <code class="muted">{unit.unit}</code>
              </td>
              <td>{unit.manager}</td>
              <td data-field="unit-state">
                {[unit.load_state, unit.active_state, unit.sub_state].map((s) => s ?? "?").join(" / ")}
              </td>
              <td class="num">{unit.main_pid ?? "—"}</td>
              <td>{unit.error ?? ""}</td>
            </tr>
          )}
        />
      )}
      <h3>Declared services and the reconciler's last decision ({services.length})</h3>
      <PagedTable
        items={services}
        size={10}
        label="declared services"
        head={
          <>
            <th>service</th>
            <th>kind</th>
            <th>state</th>
            <th>decision</th>
          </>
        }
        row={(service) => (
          <tr data-service={service.name}>
            <td>
              {service.name}
              <br />
              <code class="muted">{service.unit}</code>
            </td>
            <td>{service.kind}</td>
            <td data-field="service-state">{service.state}</td>
            <td>
              {service.action ?? "—"}
              {service.reason !== null && <span class="muted">: {service.reason}</span>}
              {service.refusal !== null && <strong class="bad"> refused ({service.refusal})</strong>}
            </td>
          </tr>
        )}
      />
    </section>
  )
}

/**
 * The host's queued and running jobs (GET /api/fleet/jobs): asked only when the operator clicks, since the route
 * needs job-read for the host, which an operator's fleet-read grant usually does not hold.
 */
const Jobs = ({ name }: { name: string }) => {
  const [jobs, setJobs] = useState<ReadonlyArray<typeof JobView.Type> | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const list = async () => {
    setRefusal(undefined)
    const read = await callControlPlane((client) =>
      Effect.all(
        (["running", "queued"] as const).map((state) => client.jobs.live({ urlParams: { target: name, state } }))
      )
    )
    if (read.ok) setJobs(read.value.flatMap((answer) => answer.jobs))
    else setRefusal(read.refusal)
  }
  return (
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">Jobs</h2>
      <p>
        <button type="button" onClick={() => void list()}>
          List running and queued jobs
        </button>{" "}
        <span class="muted">needs job-read for {name}</span>
      </p>
      {refusal !== undefined && <Refused refusal={refusal} />}
      {jobs !== undefined &&
        (jobs.length === 0 ? (
          <p class="muted">No job runs or waits on {name}.</p>
        ) : (
          <PagedTable
            items={jobs}
            label="jobs"
            head={
              <>
                <th>job</th>
                <th>state</th>
                <th>command</th>
                <th>created</th>
              </>
            }
            row={(job) => (
              <tr>
                <td>
                  <code>{job.id}</code>
                </td>
                <td>{job.state}</td>
                <td>
                  <code>{job.argv.join(" ")}</code>
                </td>
                <td>{job.created_at}</td>
              </tr>
            )}
          />
        ))}
    </section>
  )
}

export const FleetHostPage = ({ name }: { name: string }) => {
  const token = useCredential("vault")
  const [data, setData] = useState<HostData | undefined>(undefined)
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined)
  const [loading, setLoading] = useState(false)
  const load = async () => {
    setLoading(true)
    const read = await readHost(name)
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
  }, [token, name])
  return (
    <section class="fleet-page">
      <p>
        <a href="/ui/fleet">← Fleet</a>
      </p>
      <h1>Host {name}</h1>
      <VaultAccess why={FLEET_WHY} />
      {token !== undefined && (
        <p>
          <button type="button" onClick={() => void load()} disabled={loading}>
            Read again
          </button>{" "}
          <span role="status" class="muted">
            {loading ? "reading on the host…" : ""}
          </span>
        </p>
      )}
      {refusal !== undefined && <Refused refusal={refusal} />}
      {data !== undefined && (
        <>
          {data.host === undefined ? (
            <p class="warning">{name} is not a target of the registry.</p>
          ) : (
            <p class="muted">
              {data.host.os}, channel {data.host.channel}, roles {data.host.roles.join(" ") || "none"}; janitor:{" "}
              {data.host.janitor.state === "present"
                ? String(
                    (data.host.janitor.document as { cleanup_state?: { outcome?: unknown } })?.cleanup_state?.outcome ??
                      "—"
                  )
                : data.host.janitor.state}
            </p>
          )}
          <div class="grid two">
            <Gates gates={data.gates} />
            <section aria-labelledby="disks-heading">
              <h2 id="disks-heading">Filesystems</h2>
              {data.host !== undefined ? <Disks host={data.host} /> : <p class="muted">—</p>}
              <p class="muted">
                From the beacon; gates measured {gib(data.gates.disk.free_bytes)} free on{" "}
                {data.gates.disk.mount ?? "no mount"}.
              </p>
            </section>
          </div>
          <Units host={data.host} services={data.services} />
          <Jobs name={name} />
        </>
      )}
    </section>
  )
}
