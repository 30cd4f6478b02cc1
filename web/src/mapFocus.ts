// The map's `?focus=` (the deep link a host's page writes): it ends up in API paths, so only a host
// id, or the id of a node drawn for a host, is taken; anything else is ignored.
import type { HostEntry } from './mapState.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const HOST_ID = new RegExp(`^${UUID}$`);
/** `<kind>:<uuid>`, as NODE_ID in src/modules/topology/schemas.ts. */
const NODE_ID = new RegExp(`^[a-z_]+:${UUID}$`);

/** The host `focus` names: a host id as is, a node id through the host it is drawn for. */
export function focusedHost(focus: string | null, hosts: HostEntry[]): string | undefined {
  if (!focus) return undefined;
  if (HOST_ID.test(focus)) return focus;
  if (!NODE_ID.test(focus)) return undefined;
  return hosts.find((h) => h.nodeIds.includes(focus))?.hostId ?? (focus.startsWith('host:') ? focus.slice('host:'.length) : undefined);
}
