import { Fleet } from "./Fleet.js"
import { FleetHostPage } from "./FleetHost.js"

/** /ui/fleet: the fleet; /ui/fleet/HOST: one host's gates, filesystems, units and jobs. */
export const FleetPage = ({ rest }: { readonly rest: ReadonlyArray<string> }) =>
  rest[0] === undefined ? <Fleet /> : <FleetHostPage name={decodeURIComponent(rest[0])} />
