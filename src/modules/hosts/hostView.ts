// A host as the API shows it: the host row with its children, all live or all as of `at`.
import type { Db } from '../../core/db.js';
import { groupBy, type Row } from '../../core/historyTable.js';
import { withBindings } from '../bindings/table.js';
import { interfaceTable } from '../interfaces/table.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';
import { DEFAULT_HOST_EXPIRY_DAYS, hostStatus } from './presence.js';

/** The order of each list of a host's children (historyWithChildren.ts answers them in the same order). */
export const HOST_CHILD_ORDER = {
  ip_addresses: 't.position, t.id', ports: 't.number, t.protocol, t.id', services: 't.position, t.id', interfaces: 't.if_index, t.id',
} as const;

/** Each network's host_expiry_days, for the networks of `hosts`. */
async function expiryDays(db: Db, org: string, hosts: Row[]): Promise<Map<string, number>> {
  const ids = [...new Set(hosts.map((h) => h.network_id as string))];
  if (!ids.length) return new Map();
  const rows = await db.query<{ id: string; host_expiry_days: number }>(
    `select id, host_expiry_days from networks where organization_id = ? and id = any(?::uuid[])`, [org, ids]);
  return new Map(rows.map((r) => [r.id, r.host_expiry_days]));
}

/** Attaches children to a page of hosts of organization `org`: five queries whatever the page size. */
export async function withChildren(db: Db, org: string, hosts: Row[], at?: string): Promise<Row[]> {
  const ids = hosts.map((h) => h.id as string);
  const [ips, ports, services, interfaces] = await Promise.all([
    ipAddressTable.byParent(db, org, 'host_id', ids, at, HOST_CHILD_ORDER.ip_addresses),
    portTable.byParent(db, org, 'host_id', ids, at, HOST_CHILD_ORDER.ports),
    serviceTable.byParent(db, org, 'host_id', ids, at, HOST_CHILD_ORDER.services),
    interfaceTable.byParent(db, org, 'host_id', ids, at, HOST_CHILD_ORDER.interfaces),
  ]);
  const expiry = await expiryDays(db, org, hosts);
  const now = at ? new Date(at) : new Date();
  const byHost = {
    ips: groupBy(ips, 'host_id'), ports: groupBy(ports, 'host_id'), services: groupBy(await withBindings(db, org, services, at), 'host_id'), interfaces: groupBy(interfaces, 'host_id'),
  };
  return hosts.map((h) => ({
    ...h,
    status: hostStatus(h, expiry.get(h.network_id as string) ?? DEFAULT_HOST_EXPIRY_DAYS, now),
    interfaces: byHost.interfaces.get(h.id as string) ?? [],
    ip_addresses: byHost.ips.get(h.id as string) ?? [],
    ports: byHost.ports.get(h.id as string) ?? [],
    services: byHost.services.get(h.id as string) ?? [],
  }));
}
