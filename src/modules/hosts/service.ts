// Hosts: list, read, create and replace with their children (spec §4.2, decisions §6), delete.
// Every write is one transaction: a failure at any step changes nothing.
import { consolidateHosts } from './consolidate.js';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, accessDenied, invalidReference } from '../../core/errors.js';
import type { Row } from '../../core/historyTable.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId, assertSameNetwork, orderTerms } from '../../http/schemas.js';
import { assertBindingTargets } from '../bindings/service.js';
import { bindingTable } from '../bindings/table.js';
import { assertIpAddressesInSubnets } from '../ipAddresses/service.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { networkService } from '../networks/service.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';
import { tagService } from '../tags/service.js';
import { planIpAddresses, planPorts, planServices, withServerIds, type IpAddressInput, type OwnChildIds, type PortInput, type ServiceInput } from './hostSync.js';
import { hostHistory } from './historyWithChildren.js';
import { statusClause } from './presence.js';
import { withChildren } from './hostView.js';
import { hostSearchClause } from './search.js';
import { hostTable } from './table.js';

export interface HostInput {
  id?: string;
  name: string;
  network_id?: string;
  hostname: string | null;
  description: string | null;
  hidden: boolean;
  ignored?: boolean;
  tags: string[];
  virtualization: object | null;
  credential_assignments?: object[] | null;
  expected_updated_at?: string | null;
  ip_addresses?: IpAddressInput[] | null;
  ports?: PortInput[] | null;
  services?: ServiceInput[] | null;
}

const ORDER_COLUMNS = { name: 'name', hostname: 'hostname', created_at: 'created_at', updated_at: 'updated_at', last_seen_at: 'last_seen_at' };
const MANUAL = { type: 'Manual' };

/** The ids of the host's children now: the ones a PUT keeps (none for a new host). */
async function ownChildIds(db: Db, hostId: string, organizationId: string): Promise<OwnChildIds> {
  const rows = await db.query<{ kind: keyof OwnChildIds; id: string }>(
    `select 'ipAddresses' as kind, id from ip_addresses where host_id = ? and organization_id = ?
     union all select 'ports', id from ports where host_id = ? and organization_id = ?
     union all select 'services', id from services where host_id = ? and organization_id = ?
     union all select 'bindings', b.id from bindings b join services s on s.id = b.service_id and s.organization_id = b.organization_id
                where s.host_id = ? and s.organization_id = ?`,
    [hostId, organizationId, hostId, organizationId, hostId, organizationId, hostId, organizationId],
  );
  const own: OwnChildIds = { ipAddresses: new Set(), ports: new Set(), services: new Set(), bindings: new Set() };
  for (const r of rows) own[r.kind].add(r.id);
  return own;
}

/**
 * A listed child id of another host that the caller can see is 400 (decisions §6: the child does not
 * move); any other id that is not this host's (unknown, or out of the caller's sight, in another
 * organization too) is a new child's placeholder (withServerIds): answered as if never used.
 */
async function assertNotAnotherHostsChild(db: Db, scope: Scope, host: Row, input: HostInput, own: OwnChildIds): Promise<void> {
  const listed = (kind: keyof OwnChildIds, items: Array<{ id?: string }> | undefined | null) =>
    (items ?? []).map((i) => i.id?.toLowerCase()).filter((id): id is string => !!id && !own[kind].has(id));
  const checks: Array<[string, string, string, string[]]> = [
    ['ip_addresses', 'IPAddress', 'ip_addresses.id', listed('ipAddresses', input.ip_addresses)],
    ['ports', 'Port', 'ports.id', listed('ports', input.ports)],
    ['services', 'Service', 'services.id', listed('services', input.services)],
    ['bindings', 'Binding', 'services.bindings.id', listed('bindings', input.services?.flatMap((x) => x.bindings ?? []))],
  ];
  for (const [table, entity, field, ids] of checks) {
    if (!ids.length) continue;
    const taken = await db.query<{ id: string; network_id: string }>(
      `select id, network_id from ${table} where id = any(?::uuid[]) and organization_id = ?`, [ids, host.organization_id],
    );
    const seen = taken.find((r) => canSeeNetwork(scope, r.network_id));
    if (seen) throw invalidReference(entity, seen.id, field);
  }
}

async function syncChildren(db: Db, scope: Scope, host: Row, given: HostInput): Promise<void> {
  const own = await ownChildIds(db, host.id as string, host.organization_id as string);
  await assertNotAnotherHostsChild(db, scope, host, given, own);
  const input = withServerIds(given, own);
  const owned = { organization_id: host.organization_id, network_id: host.network_id, host_id: host.id };
  const hostOwner = { column: 'host_id', ids: [host.id as string], organizationId: host.organization_id as string };
  if (input.ip_addresses) {
    const ips = planIpAddresses(input.ip_addresses);
    await assertIpAddressesInSubnets(db, scope, host.network_id as string, ips, 'ip_addresses.subnet_id', host.id as string);
    await ipAddressTable.syncChildren(db, hostOwner, ips.map((i) => ({ ...owned, ...i })), ['subnet_id', 'ip_address', 'mac_address', 'name', 'position'], 'ip_addresses.id', own.ipAddresses);
  }
  if (input.ports) {
    const ports = planPorts(input.ports);
    await portTable.syncChildren(db, hostOwner, ports.map((p) => ({ ...owned, ...p })), ['number', 'protocol', 'type'], 'ports.id', own.ports);
  }
  if (input.services) {
    const services = planServices(input.services);
    await tagService.assertTagsExist(db, scope, [...new Set(services.flatMap((s) => s.tags))], 'services.tags');
    await serviceTable.syncChildren(
      db, hostOwner,
      services.map(({ bindings: _b, ...s }) => ({ ...owned, ...s, source: MANUAL })),
      ['name', 'service_definition', 'position', 'tags', 'virtualization'], 'services.id', own.services,
    );
    const bindings = services.flatMap((s) => s.bindings.map((b) => ({ ...b, service_id: s.id })));
    await assertBindingTargets(db, scope.organizationId, host.id as string, bindings, 'services.bindings.');
    const { host_id: _h, ...bindingOwned } = owned;
    await bindingTable.syncChildren(
      db, { column: 'service_id', ids: services.map((s) => s.id), organizationId: host.organization_id as string },
      bindings.map((b) => ({ ...bindingOwned, ...b })), ['type', 'port_id', 'ip_address_id'], 'services.bindings.id', own.bindings,
    );
    // Bindings of services that were dropped went with them (ON DELETE CASCADE).
  }
}

/** A host a daemon runs on is not deleted while the daemon exists (409 entity_in_use). */
async function assertNoDaemon(db: Db, organizationId: string, hostIds: string[]): Promise<void> {
  const daemon = await db.one<{ id: string; host_id: string }>(
    `select id, host_id from daemons where organization_id = ? and host_id = any(?::uuid[]) limit 1`, [organizationId, hostIds]);
  if (daemon) throw new AppError('entity_in_use', { entity: 'Host', id: daemon.host_id, used_by: `Daemon ${daemon.id}` });
}

export const hostService = {
  async list(db: Db, scope: Scope, q: Record<string, any>) {
    const where: Array<[string, unknown[]]> = [];
    if (q.network_id) {
      await networkService.assertFilterable(db, scope, q.network_id, q.at);
      where.push(['t.network_id = ?', [q.network_id]]);
    }
    if (q.tag_ids?.length) where.push(['t.tags && ?::uuid[]', [q.tag_ids]]);
    if (q.hidden !== undefined) where.push(['t.hidden = ?', [q.hidden]]);
    if (q.device_type) where.push(['lower(t.device_type) = lower(?)', [q.device_type]]);
    if (q.os) where.push([`t.os_name ilike ? || '%'`, [String(q.os).replace(/[\\%_]/g, '\\$&')]]);
    if (q.status) where.push(statusClause(q.status, q.at ?? new Date().toISOString(), scope.organizationId));
    if (q.q) where.push(hostSearchClause(scope.organizationId, String(q.q), q.at));
    const { rows, total } = await hostTable.list(db, scope, {
      where, ids: q.ids, order: orderTerms(q, ORDER_COLUMNS, 'created_at'), limit: q.limit, offset: q.offset, at: q.at,
    });
    return Page.of(await withChildren(db, scope.organizationId, rows, q.at), total, q.limit, q.offset);
  },

  async get(db: Db, scope: Scope, id: string, at?: string) {
    return (await withChildren(db, scope.organizationId, [await hostTable.get(db, scope, id, at)], at))[0]!;
  },

  async create(db: Db, scope: Scope, input: HostInput) {
    return db.transaction(async (tx) => {
      await networkService.assertWritable(tx, scope, input.network_id!);
      await tagService.assertTagsExist(tx, scope, input.tags);
      const host = await hostTable.insert(tx, {
        id: randomUUID(), organization_id: scope.organizationId, network_id: input.network_id, name: input.name,
        hostname: input.hostname, description: input.description, hidden: input.hidden || input.ignored === true, ignored: input.ignored === true, tags: input.tags, source: MANUAL,
        virtualization: input.virtualization, credential_assignments: input.credential_assignments ?? [],
      });
      await syncChildren(tx, scope, host, input);
      return this.get(tx, scope, host.id as string);
    });
  },

  async update(db: Db, scope: Scope, id: string, input: HostInput) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const values: Row = {
        name: input.name, hostname: input.hostname, description: input.description, hidden: input.hidden,
        tags: input.tags, virtualization: input.virtualization,
      };
      if (input.credential_assignments) values.credential_assignments = input.credential_assignments;
      if (input.ignored !== undefined) values.ignored = input.ignored;
      if (input.ignored) values.hidden = true;
      // A person who writes another name owns it from now on: discovery never renames the host again.
      const named = await tx.query<{ name: string }>(`select name from hosts where organization_id = ? and id = ?`, [scope.organizationId, id]);
      if (named[0] && named[0].name !== input.name) values.name_source = null;
      // The update reads the host locked (404 / 403 first); a bad tag then rolls the transaction back.
      const host = await hostTable.update(tx, scope, id, values, input.expected_updated_at);
      assertSameNetwork(host.network_id, input.network_id, 'a host'); // refused after the locked read: the transaction undoes the update
      await tagService.assertTagsExist(tx, scope, input.tags);
      await syncChildren(tx, scope, host, input);
      return this.get(tx, scope, id);
    });
  },

  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      await hostTable.get(tx, scope, id, undefined, true);
      await assertNoDaemon(tx, scope.organizationId, [id]);
      await hostTable.remove(tx, scope, id);
    });
  },

  /** Merges `otherId` into `destinationId` (consolidate.ts) and answers the destination. */
  async consolidate(db: Db, scope: Scope, destinationId: string, otherId: string) {
    return db.transaction(async (tx) => {
      await consolidateHosts(tx, scope, destinationId, otherId);
      return this.get(tx, scope, destinationId);
    });
  },

  /** The host's states with its children's changes (historyWithChildren.ts). */
  history: (db: Db, scope: Scope, id: string, q: { limit?: number; before?: string } = {}) => hostHistory(db, scope, id, q),
};
