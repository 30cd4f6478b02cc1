// A host as the API shows it: the host row with its children, all live or all as of `at`.
import type { Db } from '../../core/db.js';
import { groupBy, type Row } from '../../core/historyTable.js';
import { withBindings } from '../bindings/table.js';
import { interfaceTable } from '../interfaces/table.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';

/** Attaches children to a page of hosts: five queries whatever the page size. */
export async function withChildren(db: Db, hosts: Row[], at?: string): Promise<Row[]> {
  const ids = hosts.map((h) => h.id as string);
  const [ips, ports, services, interfaces] = await Promise.all([
    ipAddressTable.byParent(db, 'host_id', ids, at, 't.position, t.id'),
    portTable.byParent(db, 'host_id', ids, at, 't.number, t.protocol, t.id'),
    serviceTable.byParent(db, 'host_id', ids, at, 't.position, t.id'),
    interfaceTable.byParent(db, 'host_id', ids, at, 't.if_index, t.id'),
  ]);
  const byHost = {
    ips: groupBy(ips, 'host_id'), ports: groupBy(ports, 'host_id'), services: groupBy(await withBindings(db, services, at), 'host_id'), interfaces: groupBy(interfaces, 'host_id'),
  };
  return hosts.map((h) => ({
    ...h,
    interfaces: byHost.interfaces.get(h.id as string) ?? [],
    ip_addresses: byHost.ips.get(h.id as string) ?? [],
    ports: byHost.ports.get(h.id as string) ?? [],
    services: byHost.services.get(h.id as string) ?? [],
  }));
}
