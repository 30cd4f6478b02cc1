// Many new hosts with their children in a fixed number of set-based statements (POST
// /api/v1/hosts/bulk): the per-host create (service.ts) took ~14 statements a host, each insert
// firing its history and event triggers (bench/bulkCreate.ts measures both). The rules are the
// single create's, checked for every item before anything is written: network writable, tags
// known, children planned (hostSync.ts), no listed child id of another visible host, each address
// in a visible subnet of the host's network and inside it, and no address another host holds
// (the advisory locks discovery takes, at most BULK_ADDRESS_LOCK_BUDGET of them, then live rows,
// then the earlier items of the request).
// A refusal names the lowest item index that any rule refuses, as one-by-one creates would.
import { randomUUID } from 'node:crypto';
import { ADDRESS_SETS, addressKey, addressSetKey, MIXED_LOCKS } from '../../core/advisoryLocks.js';
import type { Db } from '../../core/db.js';
import { AppError, alreadyExists, invalidReference } from '../../core/errors.js';
import type { Row } from '../../core/historyTable.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { itemRefused } from '../../http/bulkCreate.js';
import { bindingTable } from '../bindings/table.js';
import { assertIpAddressesInSubnets } from '../ipAddresses/service.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { networkService } from '../networks/service.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';
import { tagService } from '../tags/service.js';
import { planIpAddresses, planPorts, planServices, withServerIds } from './hostSync.js';
import { withChildren } from './hostView.js';
import type { HostInput } from './service.js';
import { hostTable } from './table.js';

/**
 * Addresses in one request at most (the request's size and its transaction's length; its locks
 * are bounded by BULK_ADDRESS_LOCK_BUDGET whatever the count).
 */
export const BULK_MAX_IP_ADDRESSES = 4000;

/**
 * The most advisory locks a bulk create holds for its addresses, to its commit: one per
 * address filled PostgreSQL's shared lock table (about 12,000 slots with the default settings, for
 * every transaction of the server) with three 4,000-address bulks, and then any transaction of any
 * tenant needing a slot failed with "out of shared memory" (bench/bulkLocks.ts). 64 is what the
 * table is sized for per transaction (max_locks_per_transaction's default).
 */
export const BULK_ADDRESS_LOCK_BUDGET = ADDRESS_SETS;

/**
 * The bulk's address locks (src/core/advisoryLocks.ts), parameters: organization id, the rows
 * (subnet_id, ip_address) as JSON. Its addresses are grouped by their subnet's bucket
 * (`subnets:` key); a bucket is locked fine-grained as any writer does (each address exclusive,
 * the bucket shared) while the whole stays within BULK_ADDRESS_LOCK_BUDGET, and the buckets with
 * the most addresses are taken exclusively instead (one lock each, every writer of an address in
 * their subnets waits for this commit) until it does. Buckets ascending by address count: bucket i
 * stays fine-grained iff the fine cost of buckets 1..i plus one lock for each later bucket fits.
 */
const BULK_ADDRESS_LOCKS = MIXED_LOCKS(`
  with x as (select distinct x.subnet_id, x.ip_address::inet as ip_address, ${addressSetKey('?::uuid', 'x.subnet_id')} as bucket
             from jsonb_to_recordset(?::jsonb) as x(subnet_id uuid, ip_address text)),
       per_bucket as (select bucket, count(*) as n from x group by bucket),
       plan as (select bucket, sum(n + 1) over w + count(*) over () - row_number() over w <= ${BULK_ADDRESS_LOCK_BUDGET} as fine
                from per_bucket window w as (order by n, bucket))
  select bucket as k, fine as shared from plan
  union all select ${addressKey('x.subnet_id', 'x.ip_address')}, false from x join plan using (bucket) where plan.fine`);
const MANUAL = { type: 'Manual' };
const NO_CHILDREN = { ipAddresses: new Set<string>(), ports: new Set<string>(), services: new Set<string>(), bindings: new Set<string>() };

/** The first refusal by item order, whichever check found it. */
class Refusals {
  index = Infinity;
  error: unknown;
  add(index: number, error: unknown): void {
    if (index < this.index) [this.index, this.error] = [index, error];
  }
  throwFirst(): void {
    if (this.error !== undefined) throw itemRefused(this.index, this.error);
  }
}

/** Runs a check over many items at once; a refusal naming `id` is the first item `owns` it. */
async function checkAll(refusals: Refusals, check: () => Promise<void>, itemOf: (err: AppError) => number | undefined): Promise<void> {
  try {
    await check();
  } catch (err) {
    const index = err instanceof AppError ? itemOf(err) : undefined;
    if (index === undefined) throw err;
    refusals.add(index, err);
  }
}

type Planned = ReturnType<typeof plan>;
function plan(input: HostInput) {
  const given = withServerIds(input, NO_CHILDREN); // every listed child id is a placeholder for a new child
  return {
    ips: given.ip_addresses ? planIpAddresses(given.ip_addresses) : [],
    ports: given.ports ? planPorts(given.ports) : [],
    services: given.services ? planServices(given.services) : [],
  };
}

export async function createHosts(db: Db, scope: Scope, inputs: HostInput[]): Promise<Row[]> {
  let addresses = 0;
  for (const [i, h] of inputs.entries()) {
    addresses += h.ip_addresses?.length ?? 0;
    if (addresses > BULK_MAX_IP_ADDRESSES) {
      throw itemRefused(i, new AppError('validation_failed', { field: 'ip_addresses', reason: `brings the request over ${BULK_MAX_IP_ADDRESSES} IP addresses: send the rest in another request` }));
    }
  }
  return db.transaction(async (tx) => {
    const refusals = new Refusals();
    const ids = inputs.map(() => randomUUID());
    const firstWith = (test: (h: HostInput) => boolean) => { const i = inputs.findIndex(test); return i < 0 ? undefined : i; };

    // Networks: each once, answered for by the first item naming it.
    for (const network of new Set(inputs.map((h) => h.network_id!))) {
      await checkAll(refusals, () => networkService.assertWritable(tx, scope, network), () => firstWith((h) => h.network_id === network));
    }
    // Tags of the hosts and of their services.
    await checkAll(refusals, () => tagService.assertTagsExist(tx, scope, [...new Set(inputs.flatMap((h) => h.tags))]),
      (err) => firstWith((h) => h.tags.includes(String(err.params.id))));
    const serviceTags = [...new Set(inputs.flatMap((h) => (h.services ?? []).flatMap((s) => s.tags)))];
    await checkAll(refusals, () => tagService.assertTagsExist(tx, scope, serviceTags, 'services.tags'),
      (err) => firstWith((h) => (h.services ?? []).some((s) => s.tags.includes(String(err.params.id)))));

    // Children, planned as the single create plans them (positions, duplicates, binding rules).
    const planned: Array<Planned | undefined> = inputs.map((input, i) => {
      try {
        const p = plan(input);
        // A binding names a port or address of its own host (bindings/service.ts assertBindingTargets; a new host has only these).
        const own = new Set([...p.ips.map((x) => x.id), ...p.ports.map((x) => x.id)]);
        for (const b of p.services.flatMap((s) => s.bindings)) {
          if (b.port_id && !own.has(b.port_id)) throw invalidReference('Port', b.port_id, 'services.bindings.port_id');
          if (b.ip_address_id && !own.has(b.ip_address_id)) throw invalidReference('IPAddress', b.ip_address_id, 'services.bindings.ip_address_id');
        }
        return p;
      } catch (err) {
        refusals.add(i, err);
        return undefined;
      }
    });

    // A listed child id of another host the caller can see is 400, as for one host (service.ts assertNotAnotherHostsChild).
    const listed: Array<[table: string, entity: string, field: string, pick: (h: HostInput) => Array<string | undefined>]> = [
      ['ip_addresses', 'IPAddress', 'ip_addresses.id', (h) => (h.ip_addresses ?? []).map((x) => x.id)],
      ['ports', 'Port', 'ports.id', (h) => (h.ports ?? []).map((x) => x.id)],
      ['services', 'Service', 'services.id', (h) => (h.services ?? []).map((x) => x.id)],
      ['bindings', 'Binding', 'services.bindings.id', (h) => (h.services ?? []).flatMap((s) => (s.bindings ?? []).map((b) => b.id))],
    ];
    for (const [table, entity, field, pick] of listed) {
      const childIds = [...new Set(inputs.flatMap((h) => pick(h).filter((id): id is string => !!id).map((id) => id.toLowerCase())))];
      if (!childIds.length) continue;
      const taken = await tx.query<{ id: string; network_id: string }>(`select id, network_id from ${table} where id = any(?::uuid[]) and organization_id = ?`, [childIds, scope.organizationId]);
      for (const row of taken.filter((r) => canSeeNetwork(scope, r.network_id))) {
        refusals.add(inputs.findIndex((h) => pick(h).some((id) => id?.toLowerCase() === row.id)), invalidReference(entity, row.id, field));
      }
    }

    // Addresses: subnets visible, on the host's network and holding the address (one query per network).
    const byNetwork = new Map<string, number[]>();
    inputs.forEach((h, i) => byNetwork.set(h.network_id!, [...(byNetwork.get(h.network_id!) ?? []), i]));
    for (const [network, items] of byNetwork) {
      const ips = items.flatMap((i) => planned[i]?.ips ?? []);
      const itemOf = (err: AppError) => {
        const match = (a: { subnet_id: string; ip_address: string }) => (err.code === 'ip_address_out_of_range' ? a.ip_address === err.params.ip : a.subnet_id === err.params.id);
        return items.find((i) => planned[i]?.ips.some(match));
      };
      await checkAll(refusals, () => assertIpAddressesInSubnets(tx, scope, network, ips, 'ip_addresses.subnet_id'), itemOf);
    }
    refusals.throwFirst(); // what follows assumes valid subnets

    // No address another host holds: discovery's locks, then live rows and the earlier items.
    const rows = planned.flatMap((p, item) => (p?.ips ?? []).map((a) => ({ item, subnet_id: a.subnet_id, ip_address: a.ip_address })));
    if (rows.length) {
      const json = JSON.stringify(rows.map((r, n) => ({ n, ...r })));
      await tx.query(BULK_ADDRESS_LOCKS, [scope.organizationId, json]);
      const found = await tx.query<{ n: number; ip: string; cidr: string; holder_id: string | null; holder_name: string | null }>(
        `select x.n, host(x.ip_address::inet) as ip, s.cidr::text as cidr, h.id as holder_id, h.name as holder_name
         from jsonb_to_recordset(?::jsonb) as x(n int, subnet_id uuid, ip_address text)
         join subnets s on s.organization_id = ? and s.id = x.subnet_id
         left join lateral (select a.host_id from ip_addresses a
           where a.organization_id = ? and a.subnet_id = x.subnet_id and a.ip_address = x.ip_address::inet limit 1) a on true
         left join hosts h on h.organization_id = ? and h.id = a.host_id
         order by x.n`,
        [json, scope.organizationId, scope.organizationId, scope.organizationId],
      );
      const firstItem = new Map<string, number>();
      for (const f of found) {
        const { item, subnet_id } = rows[f.n]!;
        const key = `${subnet_id}|${f.ip}`;
        const earlier = firstItem.get(key);
        if (f.holder_id) refusals.add(item, new AppError('ip_address_duplicate', { ip: f.ip, subnet: f.cidr, host_id: f.holder_id, host_name: f.holder_name }));
        else if (earlier === item) refusals.add(item, alreadyExists('IPAddress', 'subnet_id/ip_address', `${subnet_id}/${f.ip}`));
        else if (earlier !== undefined) refusals.add(item, new AppError('ip_address_duplicate', { ip: f.ip, subnet: f.cidr, host_id: ids[earlier]!, host_name: inputs[earlier]!.name }));
        else firstItem.set(key, item);
      }
    }
    refusals.throwFirst();

    // Writes: one statement per table, each firing its history and event triggers once.
    const hostRows = inputs.map((h, i) => ({
      id: ids[i], organization_id: scope.organizationId, network_id: h.network_id, name: h.name, hostname: h.hostname, description: h.description,
      hidden: h.hidden, tags: h.tags, source: MANUAL, virtualization: h.virtualization, credential_assignments: h.credential_assignments ?? [],
    }));
    const cols = Object.keys(hostRows[0]!);
    const created = await tx.query(
      `insert into hosts (${cols.join(', ')}) select ${cols.join(', ')} from jsonb_populate_recordset(null::hosts, ?::jsonb)
       returning ${hostTable.spec.columns.join(', ')}, null::timestamptz as valid_to`,
      [JSON.stringify(hostRows)],
    );
    const owned = (i: number) => ({ organization_id: scope.organizationId, network_id: inputs[i]!.network_id, host_id: ids[i] });
    const owners = { column: 'host_id', ids: ids as string[], organizationId: scope.organizationId };
    const none = new Set<string>(); // new hosts: nothing to delete
    const all = <T>(pick: (p: Planned, i: number) => T[]) => planned.flatMap((p, i) => pick(p!, i));
    await ipAddressTable.syncChildren(tx, owners, all((p, i) => p.ips.map((a) => ({ ...owned(i), ...a }))),
      ['subnet_id', 'ip_address', 'mac_address', 'name', 'position'], 'ip_addresses.id', none);
    await portTable.syncChildren(tx, owners, all((p, i) => p.ports.map((x) => ({ ...owned(i), ...x }))), ['number', 'protocol', 'type'], 'ports.id', none);
    const services = all((p, i) => p.services.map(({ bindings: _b, ...s }) => ({ ...owned(i), ...s, source: MANUAL })));
    if (services.length) {
      await serviceTable.syncChildren(tx, owners, services, ['name', 'service_definition', 'position', 'tags', 'virtualization'], 'services.id', none);
      const bindings = all((p, i) => p.services.flatMap((s) => s.bindings.map((b) => ({ organization_id: scope.organizationId, network_id: inputs[i]!.network_id, ...b, service_id: s.id }))));
      if (bindings.length) {
        await bindingTable.syncChildren(tx, { column: 'service_id', ids: services.map((s) => s.id as string), organizationId: scope.organizationId }, bindings, ['type', 'port_id', 'ip_address_id'], 'services.bindings.id', none);
      }
    }
    const byId = new Map(created.map((r) => [r.id as string, hostTable.toResponse(r)]));
    return withChildren(tx, scope.organizationId, ids.map((id) => byId.get(id)!));
  });
}
