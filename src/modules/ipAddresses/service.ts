// IP addresses of hosts (spec §2.3): an address lies inside its subnet, and the subnet is on its
// host's network; network and organization always come from the host.
import { randomUUID } from 'node:crypto';
import { addressLockKeys, MIXED_LOCKS } from '../../core/advisoryLocks.js';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference } from '../../core/errors.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { assertSameParent, compactPositions, lockHost, placeAt, referencedHost, TIME_ORDER } from '../hosts/children.js';
import { ipAddressTable } from './table.js';

export interface IpAddressWrite {
  id?: string; host_id?: string; subnet_id: string; ip_address: string; mac_address: string | null; name: string | null;
  position?: number; expected_updated_at?: string | null;
}

/**
 * Subnets of IP addresses to be written on a host of `networkId`: each subnet must be visible
 * (unknown, another organization's or out of scope: 400 entity_reference_invalid), on that network
 * (400 entity_network_mismatch) and contain its address (400 ip_address_out_of_range). One query
 * for any number of addresses; hosts/service.ts `assertSubnets` can be this function. Given the
 * writing host, an address another host holds in that subnet is 409 ip_address_duplicate.
 */
export async function assertIpAddressesInSubnets(
  db: Db, scope: Scope, networkId: string, ips: Array<{ subnet_id: string; ip_address: string }>, field = 'subnet_id', hostId?: string,
): Promise<void> {
  if (!ips.length) return;
  const rows = await db.query<{ subnet_id: string; ip_address: string; found: string | null; network_id: string; cidr: string; inside: boolean }>(
    `select x.subnet_id, x.ip_address, s.id as found, s.network_id, s.cidr::text as cidr, (x.ip_address::inet <<= s.cidr) as inside
     from jsonb_to_recordset(?::jsonb) as x(n int, subnet_id uuid, ip_address text)
     left join subnets s on s.id = x.subnet_id and s.organization_id = ?
     order by x.n`,
    [JSON.stringify(ips.map((i, n) => ({ n, subnet_id: i.subnet_id, ip_address: i.ip_address }))), scope.organizationId],
  );
  for (const r of rows) {
    if (!r.found || !canSeeNetwork(scope, r.network_id)) throw invalidReference('Subnet', r.subnet_id, field);
    if (r.network_id !== networkId) throw new AppError('entity_network_mismatch', { entity: 'Subnet', id: r.subnet_id });
    if (!r.inside) throw new AppError('ip_address_out_of_range', { ip: r.ip_address, subnet: r.cidr });
  }
  // After the subnets are known visible: the holder is on the subnet's network, so naming it reveals nothing.
  if (hostId) await assertIpAddressesFree(db, scope.organizationId, hostId, ips);
}

/**
 * One address is on one host per subnet: the same IP in a subnet on another host (a live row) is
 * 409 ip_address_duplicate naming that host. A transaction-scoped advisory lock per address (the
 * one discovery's ingest takes) makes two writers of one address take turns, so of two concurrent
 * requests one is refused; the check runs after the lock, and in READ COMMITTED it sees what the
 * other request committed.
 * The host's own rows are left out (a host PUT replaces them; one host holding an address twice is
 * the unique constraint's 409). Discovery matches addresses by IP and subnet, so never duplicates.
 */
async function assertIpAddressesFree(db: Db, organizationId: string, hostId: string, ips: Array<{ subnet_id: string; ip_address: string }>): Promise<void> {
  // The keys discovery locks an address with (src/core/advisoryLocks.ts): a manual write and a report of it take turns;
  // the subnet's bucket shared, so a bulk create holding it (exclusive) is waited for too.
  await db.query(MIXED_LOCKS(`with x as (select subnet_id, ip_address::inet as ip_address from jsonb_to_recordset(?::jsonb) as x(subnet_id uuid, ip_address text))
                              ${addressLockKeys('?::uuid', 'x')}`), [JSON.stringify(ips), organizationId]);
  // The address typed inet in the record, not cast in the join: a cast is not LEAKPROOF, and under a
  // row-level policy such a join condition cannot use the (subnet, address) index (bench/rls.ts).
  const taken = await db.one<{ ip_address: string; cidr: string; host_id: string; host_name: string }>(
    `select host(a.ip_address) as ip_address, s.cidr::text as cidr, h.id as host_id, h.name as host_name
     from jsonb_to_recordset(?::jsonb) as x(subnet_id uuid, ip_address inet)
     join ip_addresses a on a.organization_id = ? and a.subnet_id = x.subnet_id and a.ip_address = x.ip_address and a.host_id <> ?
     join hosts h on h.organization_id = ? and h.id = a.host_id
     join subnets s on s.organization_id = ? and s.id = a.subnet_id
     order by a.ip_address limit 1`,
    [JSON.stringify(ips.map((i) => ({ subnet_id: i.subnet_id, ip_address: i.ip_address }))), organizationId, hostId, organizationId, organizationId],
  );
  if (taken) throw new AppError('ip_address_duplicate', { ip: taken.ip_address, subnet: taken.cidr, host_id: taken.host_id, host_name: taken.host_name });
}

const ORDER = { ip_address: 'ip_address', name: 'name', position: 'position', ...TIME_ORDER };

export const ipAddressService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(ipAddressTable, db, scope, q, { filters: ['host_id', 'subnet_id'], order: ORDER }),

  get: (db: Db, scope: Scope, id: string, at?: string) => ipAddressTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: IpAddressWrite) {
    return db.transaction(async (tx) => {
      const host = await referencedHost(tx, scope, input.host_id!);
      await assertIpAddressesInSubnets(tx, scope, host.network_id, [input], 'subnet_id', host.id as string);
      const id = randomUUID(); // a body id is ignored (server-owned, like every create's)
      const position = await placeAt(tx, 'ip_addresses', { column: 'host_id', id: host.id, organizationId: scope.organizationId }, id, input.position);
      return ipAddressTable.insert(tx, {
        id, organization_id: host.organization_id, network_id: host.network_id, host_id: host.id, subnet_id: input.subnet_id,
        ip_address: input.ip_address, mac_address: input.mac_address, name: input.name, position,
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: IpAddressWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await ipAddressTable.get(tx, scope, id);
      assertSameParent('host_id', current.host_id, input.host_id, 'An IP address');
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await assertIpAddressesInSubnets(tx, scope, current.network_id as string, [input], 'subnet_id', current.host_id as string);
      const position = await placeAt(tx, 'ip_addresses', { column: 'host_id', id: current.host_id as string, organizationId: scope.organizationId }, id, input.position);
      return ipAddressTable.update(tx, scope, id, {
        subnet_id: input.subnet_id, ip_address: input.ip_address, mac_address: input.mac_address, name: input.name, position,
      }, input.expected_updated_at);
    });
  },

  /** Its bindings go with it (and leave every dependency); interfaces pointing at it keep no address. */
  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      const current = await ipAddressTable.get(tx, scope, id);
      await lockHost(tx, scope.organizationId, current.host_id as string);
      await ipAddressTable.remove(tx, scope, id);
      await compactPositions(tx, 'ip_addresses', { column: 'host_id', id: current.host_id as string, organizationId: scope.organizationId });
    });
  },

  history: (db: Db, scope: Scope, id: string) => ipAddressTable.history(db, scope, id),
};
