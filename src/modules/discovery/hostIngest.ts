// Discovered hosts (reference §2.2) merged into the inventory, a batch at a time. A batch is one
// transaction of a fixed number of set-based statements, whatever its size (bench/INGEST.md counts
// them: 10 for a batch of new hosts, 2 for a batch of unchanged ones; one more, its type, when the
// batch belongs to a discovery session; one more since step 3 asks other organizations apart).
// Every statement names the organization as well as the network (one partition on the partitioned
// schema, one shard on Citus: test/core/partitionPruning.spec.ts), but for step 3's question whether
// another organization has an id:
//   1. advisory locks on what identifies each host (its id, each MAC, each subnet+IP), so two reports
//      of one machine never both create it, and a check that every address is on a known subnet;
//   2. the host each report is: the first reported address that a stored host of the network has
//      (same IP on the same subnet, same MAC, same address id), else the reported id; with children;
//   3. for what is new: whether a reported id is used elsewhere (then a fresh one: never reveal or
//      touch another network's rows; another organization's ids in a statement of their own, the one
//      that reads every organization's partition) and the lineage of a deleted host / address found again;
//   4. one insert of the new hosts, one update of the known ones (last_seen_at, last_discovery_id,
//      what discovery may fill), and one upsert per kind of child (SNMP `if_entries` are the
//      interfaces kind: by host and if_index, never deleted). A child is written only when it is
//      new or something of it changed (then with the discovery's id), so a report that changes nothing
//      writes its host's volatile columns only, and no history state.
// Reports of one machine in one batch (they share an identity key, or match the same stored host)
// go in successive rounds of steps 2–4, in report order: the batch gives what ingesting its reports
// one by one gives. Matching and merging are pure (./plan.ts).
// A report of a Network session also takes offline the services of its host that it no longer lists
// and that only this daemon's network scans ever found, and the ports it no longer lists that no
// other service holds (markStopped), after step 4, in one statement per round. A child listed again
// is online again (its plan clears offline_at); one found again unchanged moves last_seen_at only.
// Unchanged hosts skip steps 2–4: each host keeps the digest of the last report applied to it in
// full, and the answer it got (table host_discovery_digests, forgotten by triggers on any write
// that could change the outcome; migration 0006, and 0020 for interfaces). A report with that
// digest, alone in its batch to name its machine, moves the last_seen_at of the host and of the
// children its answer lists, and gets the stored answer: one statement for all of them, right after step 1.
// A batch that writes 50 or more new rows of a kind also asks the planner what it knows of the
// network's rows of that kind (one EXPLAIN per table), and analyzes the table when that predates the
// batch (./statistics.ts).
import { createHash, randomUUID } from 'node:crypto';
import { addressLockKeys, LOCKS, MIXED_LOCKS } from '../../core/advisoryLocks.js';
import { ACROSS_ORGANIZATIONS, type Db } from '../../core/db.js';
import { AppError, invalidReference } from '../../core/errors.js';
import type { HistoryTable, Row } from '../../core/historyTable.js';
import { bindingTable } from '../bindings/table.js';
import { hostTable } from '../hosts/table.js';
import { interfaceTable } from '../interfaces/table.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { portType } from '../ports/portTypes.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';
import {
  acceptBindings, bindingFacts, canonical, claimStoredHosts, IF_ENTRY_COLUMNS, isLocallyAdministered, loneReports, matchChildren, mergeIfEntry,
  mergeSource, newSource, nextRound, type BindingFact,
} from './plan.js';
import { adoptSelfReportedHosts } from './selfReport.js';
import { followNetworkGrowth, type FollowedTable } from './statistics.js';
import {
  discoveryFromDaemon, discoveryToDaemon, HOST_FACT_FIELDS,
  type DaemonHostRequest, type DaemonSource, type DiscoveredPort, type Discovery, type StoredDiscovery,
} from './vocabulary.js';

export interface IngestContext {
  organizationId: string;
  networkId: string;
  daemonId: string;
  /** The discovery session the report belongs to: first/last_discovery_id of what it touches. */
  discoveryId?: string;
}

/** A daemon writes only to its key's network (reference §1.1: 403 daemon_network_mismatch). */
export function assertOwnNetwork(ctx: IngestContext, networkId: string): void {
  if (networkId !== ctx.networkId) throw new AppError('daemon_network_mismatch', { network_id: networkId });
}

export const NIL = '00000000-0000-0000-0000-000000000000';
export const json = (value: unknown) => JSON.stringify(value);

// Advisory locks (src/core/advisoryLocks.ts): keep batches to a few hundred hosts (DISCOVERY_SYNC_BATCH),
// each key holds a slot of PostgreSQL's shared lock table. An address is locked with its own key and
// its subnet's bucket shared (addressLockKeys), so a bulk create holding the bucket is waited for.
export { LOCKS };

/** `{name}` placeholders bound by name (these statements use some values several times). */
export function bind(sql: string, values: Record<string, unknown>): [string, unknown[]] {
  const params: unknown[] = [];
  const text = sql.replace(/\{(\w+)\}/g, (_m, name: string) => {
    if (!(name in values)) throw new Error(`bind: no value for {${name}}`);
    params.push(values[name]);
    return '?';
  });
  return [text, params];
}

/** A MAC that may identify a machine: not all zeros, and not locally administered (random). */
const isUsableMac = (mac: string | null | undefined) => !!mac && mac !== '00:00:00:00:00:00' && !isLocallyAdministered(mac);

interface StoredHost extends Row {
  h: number;
  ip_addresses: Row[];
  ports: Row[];
  services: Row[];
  bindings: Array<BindingFact & Row>;
  interfaces: Row[];
}

/** One report of a batch: its place, its content, and its addresses as PostgreSQL writes them. */
interface Report {
  h: number;
  d: Discovery;
  addresses: string[];
}

/** What identifies a report's machine (the lock keys of step 1). */
const identityKeys = (ctx: IngestContext, r: Report) => [
  `host:${ctx.networkId}:${r.d.host.id}`,
  ...r.d.ip_addresses.map((i, n) => `ip:${i.subnet_id}:${r.addresses[n]}`),
  ...r.d.ip_addresses.filter((i) => isUsableMac(i.mac_address)).map((i) => `mac:${ctx.networkId}:${i.mac_address}`),
];

/**
 * Step 1: locks, and every reported address on a subnet of the network, inside it. Answers per
 * report its addresses as PostgreSQL writes them, or why it is refused.
 */
async function lockAndCheck(db: Db, ctx: IngestContext, ds: Discovery[]): Promise<Array<string[] | AppError>> {
  const reported = ds.flatMap((d, h) => d.ip_addresses.map((i, n) => ({ h, n, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: i.mac_address })));
  const [sql, params] = bind(
    `with x as materialized (select * from json_to_recordset({reported}::json) as x(h int, n int, subnet_id uuid, ip_address inet, mac_address text)),
     locks as (${MIXED_LOCKS(`select unnest({hostKeys}::text[]) as k, false as shared
                               union all ${addressLockKeys('{org}', 'x')}
                               union all select 'mac:' || {network}::text || ':' || x.mac_address, false from x`)})
     select (select locked from locks) as locked,
            (select coalesce(json_agg(json_build_object('h', x.h, 'n', x.n, 'ip', host(x.ip_address), 'known', s.id is not null,
                                                        'inside', coalesce(x.ip_address <<= s.cidr, false))), '[]')
             from x left join subnets s on s.id = x.subnet_id and s.organization_id = {org} and s.network_id = {network}) as ips`,
    { reported: json(reported), hostKeys: ds.map((d) => `host:${ctx.networkId}:${d.host.id}`), network: ctx.networkId, org: ctx.organizationId },
  );
  const row = await db.one<{ ips: Array<{ h: number; n: number; ip: string; known: boolean; inside: boolean }> }>(sql, params);
  const result: Array<string[] | AppError> = ds.map((d) => new Array<string>(d.ip_addresses.length));
  for (const r of row!.ips) {
    const addresses = result[r.h];
    if (addresses instanceof AppError) continue;
    const ip = ds[r.h]!.ip_addresses[r.n]!;
    if (!r.known) result[r.h] = invalidReference('Subnet', ip.subnet_id, `interfaces[${r.n}].subnet_id`);
    else if (!r.inside) result[r.h] = new AppError('ip_address_out_of_range', { ip: ip.ip_address, subnet: ip.subnet_id });
    else addresses![r.n] = r.ip;
  }
  return result;
}

/** Every column of a child table, as JSON rows of its host (`alias.column`; addresses as text). */
const childJson = (table: HistoryTable, from: string, order: string, alias = 'c') => `
  (select coalesce(json_agg(r order by ${order}), '[]') from (
     select ${table.spec.columns.map((c) => (c === 'ip_address' ? `host(${alias}.ip_address) as ip_address` : `${alias}.${c}`)).join(', ')} ${from}) r)`;

/**
 * Step 2: the stored host each report is (locked, in id order), with its children; absent for a new
 * one. Reference §2.2: the first reported address that a stored host has (same IP on the same
 * subnet, then same MAC, then same address id) wins; else the reported host id, on this network.
 * `offset 0` keeps each LATERAL subquery from being pulled up into a hash join over the whole
 * network: every reported address stays one index probe, whatever the network's size.
 */
async function findHosts(db: Db, ctx: IngestContext, reports: Report[]): Promise<StoredHost[]> {
  const reported = reports.flatMap(({ h, d, addresses }) => d.ip_addresses.map((i, n) => ({
    h, n, id: i.id, subnet_id: i.subnet_id, ip_address: addresses[n], mac_address: isUsableMac(i.mac_address) ? i.mac_address : null,
  })));
  const [sql, params] = bind(
    `with x as materialized (select * from json_to_recordset({reported}::json) as x(h int, n int, id uuid, subnet_id uuid, ip_address inet, mac_address text)),
     candidates as materialized (
       select x.h, i.host_id, x.n * 3 as rank from x, lateral (
         select host_id from ip_addresses i where i.organization_id = {org} and i.subnet_id = x.subnet_id and i.ip_address = x.ip_address offset 0) i
       union all
       select x.h, i.host_id, x.n * 3 + 1 from x, lateral (
         select host_id from ip_addresses i where i.organization_id = {org} and i.network_id = {network} and i.mac_address = x.mac_address offset 0) i
       union all
       select x.h, i.host_id, x.n * 3 + 2 from x, lateral (select host_id from ip_addresses i where i.organization_id = {org} and i.id = x.id offset 0) i
       union all
       select hx.h, hx.id, 2147483647 from json_to_recordset({hosts}::json) as hx(h int, id uuid)),
     chosen as (
       select distinct on (c.h) c.h, c.host_id from candidates c,
         lateral (select 1 from hosts h where h.organization_id = {org} and h.id = c.host_id and h.network_id = {network} offset 0) h
       order by c.h, c.rank)
     select chosen.h, ${hostTable.spec.columns.map((c) => `h.${c}`).join(', ')},
       ${childJson(ipAddressTable, 'from ip_addresses c where c.organization_id = {org} and c.host_id = h.id', 'r.position, r.id')} as ip_addresses,
       ${childJson(portTable, 'from ports c where c.organization_id = {org} and c.host_id = h.id', 'r.number, r.protocol')} as ports,
       ${childJson(serviceTable, 'from services c where c.organization_id = {org} and c.host_id = h.id', 'r.position, r.id')} as services,
       ${childJson(bindingTable, `from bindings c where c.organization_id = {org}
                                    and c.service_id = any(array(select s.id from services s where s.organization_id = {org} and s.host_id = h.id))`, 'r.id')} as bindings,
       ${childJson(interfaceTable, 'from interfaces c where c.organization_id = {org} and c.host_id = h.id', 'r.if_index, r.id')} as interfaces
     from chosen join hosts h on h.organization_id = {org} and h.id = chosen.host_id
     order by h.id
     for update of h`,
    { reported: json(reported), hosts: json(reports.map(({ h, d }) => ({ h, id: d.host.id }))), network: ctx.networkId, org: ctx.organizationId },
  );
  return db.query<StoredHost>(sql, params);
}

interface NewFacts {
  h: number;
  /** The reported host id is another network's (or organization's): the host gets a fresh id. */
  host_taken: boolean;
  /** A deleted host found again (same id, or an address with the same MAC / IP on the same subnet). */
  host_lineage: string | null;
  /** Reported child ids that belong to rows of other hosts or networks (live or deleted). */
  taken: string[];
  /** Per new address (by `n`), the lineage of a deleted address with the same MAC or IP on the same subnet. */
  ip_lineage: Array<{ n: number; lineage_id: string | null }>;
}

/** What step 3 needs to know of one report. */
interface FactsQuestion {
  h: number;
  hostId: string;
  newHost: boolean;
  /** Reported ids of new children, with the host (ip, port, service) or its services (binding) that may own them. */
  ids: Array<{ kind: 'ip' | 'port' | 'service' | 'binding'; id: string }>;
  serviceIds: string[];
  newIps: Array<{ n: number; subnet_id: string; ip_address: string; mac_address: string | null }>;
}

/** Step 3: facts about what is new, for every report that has something new, in one query. */
async function newFacts(db: Db, ctx: IngestContext, questions: FactsQuestion[]): Promise<Map<number, NewFacts>> {
  if (!questions.length) return new Map();
  // The newest deleted state of an address found again: same IP on the same subnet, else same MAC
  // (two probes, each one an index lookup).
  const deletedAddress = (columns: string) => `
    (select ${columns} from (
       (select i.* from ip_addresses_history i where i.organization_id = {org} and i.subnet_id = x.subnet_id and i.ip_address = x.ip_address
          and not exists (select 1 from ip_addresses l where l.organization_id = {org} and l.id = i.id) order by i.valid_from desc limit 1)
       union all
       (select i.* from ip_addresses_history i where i.organization_id = {org} and i.network_id = {network} and i.mac_address = x.mac_address
          and not exists (select 1 from ip_addresses l where l.organization_id = {org} and l.id = i.id) order by i.valid_from desc limit 1)) i
     order by i.valid_from desc limit 1)`;
  // Ids of this organization's other hosts or networks; another organization's come from idsOfOtherOrganizations.
  const ownedBy = (history: string) => `exists (select 1 from ${history} t where t.organization_id = {org} and t.id = q.id and (t.host_id <> q.owner or t.network_id <> {network}))`;
  // Each part is computed once for the whole batch and grouped by report (`h`): a per-report
  // subquery over the batch's rows would make the statement quadratic in the batch size.
  const [sql, params] = bind(
    `with hx as materialized (select * from json_to_recordset({hosts}::json) as hx(h int, host_id uuid, new_host boolean, service_ids uuid[])),
     x as materialized (select * from json_to_recordset({addresses}::json) as x(h int, n int, subnet_id uuid, ip_address inet, mac_address text)),
     q as materialized (select q.*, hx.host_id as owner, hx.service_ids from json_to_recordset({ids}::json) as q(h int, kind text, id uuid) join hx using (h)),
     taken as (
       select q.h, array_agg(q.id) as ids from q where case q.kind
           when 'ip' then ${ownedBy('ip_addresses_history')}
           when 'port' then ${ownedBy('ports_history')}
           when 'service' then ${ownedBy('services_history')}
           else exists (select 1 from bindings_history t where t.organization_id = {org} and t.id = q.id
                          and (not (t.service_id = any(q.service_ids)) or t.network_id <> {network})) end
       group by q.h),
     address_lineage as (
       select x.h, x.n, d.host_id, d.valid_from, d.lineage_id from x, lateral ${deletedAddress('i.host_id, i.valid_from, i.lineage_id')} d),
     host_by_address as (
       select distinct on (a.h) a.h, hh.lineage_id from address_lineage a,
         lateral (select lineage_id from hosts_history h where h.organization_id = {org} and h.id = a.host_id limit 1) hh
       where not exists (select 1 from hosts l where l.organization_id = {org} and l.id = a.host_id)
       order by a.h, a.valid_from desc),
     ip_lineage as (
       select x.h, json_agg(json_build_object('n', x.n, 'lineage_id', a.lineage_id)) as list
       from x left join address_lineage a on a.h = x.h and a.n = x.n group by x.h)
     select hx.h,
       exists (select 1 from hosts_history where organization_id = {org} and id = hx.host_id and network_id <> {network}) as host_taken,
       case when hx.new_host then coalesce(
         (select lineage_id from hosts_history where organization_id = {org} and id = hx.host_id and network_id = {network} order by valid_from desc limit 1),
         hba.lineage_id) end as host_lineage,
       coalesce(taken.ids, '{}') as taken,
       coalesce(ip_lineage.list, '[]') as ip_lineage
     from hx left join taken using (h) left join host_by_address hba using (h) left join ip_lineage using (h)`,
    {
      hosts: json(questions.map((q) => ({ h: q.h, host_id: q.hostId, new_host: q.newHost, service_ids: q.serviceIds }))),
      addresses: json(questions.flatMap((q) => q.newIps.map((i) => ({ h: q.h, ...i })))),
      ids: json(questions.flatMap((q) => q.ids.map((i) => ({ h: q.h, ...i })))),
      network: ctx.networkId,
      org: ctx.organizationId,
    },
  );
  const rows = await db.query<NewFacts>(sql, params);
  const elsewhere = await idsOfOtherOrganizations(db, ctx, questions.flatMap((q) => [
    ...(q.newHost ? [{ h: q.h, kind: 'host', id: q.hostId }] : []), ...q.ids.map((i) => ({ h: q.h, ...i })),
  ]));
  for (const r of rows) {
    const theirs = elsewhere.filter((e) => e.h === r.h);
    if (theirs.some((e) => e.kind === 'host')) r.host_taken = true;
    r.taken = [...r.taken, ...theirs.filter((e) => e.kind !== 'host').map((e) => e.id)];
  }
  return new Map(rows.map((r) => [r.h, r]));
}

/** Adds a round's new rows per followed table (./statistics.ts) to `counts`, from its plans. */
function countNewRows(counts: Record<FollowedTable, number>, plans: Array<ReturnType<typeof planReport>>, matched: Array<ReturnType<typeof matchReport>>): void {
  plans.forEach((p, k) => {
    if (p.hostInsert) {
      counts.hosts_history += 1;
      counts.hosts += 1;
      counts.host_discovery_digests += 1; // a new host's digest is a new row (rememberDigests)
    }
    counts.ip_addresses_history += p.ipPlan.filter((i) => !i.stored).length;
    counts.ports_history += p.portPlan.filter((i) => !i.stored).length;
    p.servicePlan.forEach((service, n) => {
      if (service.stored) return;
      counts.services_history += 1;
      counts.bindings_history += matched[k]!.r.d.services[n]!.bindings.length; // a new service's bindings are new
    });
  });
}

/**
 * The reported ids (of one kind each; 'host' for a host) that another organization has, live or
 * deleted: daemons choose ids, and another organization's is never reused (the entity gets a fresh
 * id; test/discovery/ingest.spec.ts, 'ids used in another organization'). The one kind of ingest
 * statement that reads every organization's partition (every shard on Citus): one index probe per
 * partition and id, and only for reports that bring new ids.
 */
export async function idsOfOtherOrganizations(
  db: Db, ctx: IngestContext, ids: Array<{ h: number; kind: string; id: string }>,
): Promise<Array<{ h: number; kind: string; id: string }>> {
  if (!ids.length) return [];
  const theirs = (history: string) => `exists (select 1 from ${history} t where t.id = q.id and t.organization_id <> ?)`;
  return db.query<{ h: number; kind: string; id: string }>(
    `${ACROSS_ORGANIZATIONS} select q.h, q.kind, q.id from json_to_recordset(?::json) as q(h int, kind text, id uuid) where case q.kind
       when 'host' then ${theirs('hosts_history')} when 'subnet' then ${theirs('subnets_history')}
       when 'ip' then ${theirs('ip_addresses_history')} when 'port' then ${theirs('ports_history')}
       when 'service' then ${theirs('services_history')} else ${theirs('bindings_history')} end`,
    [json(ids), ...new Array(6).fill(ctx.organizationId)],
  );
}

/**
 * Writes `rows` of one kind in one statement: new ids are inserted, stored ones get `updatable`
 * (and last_seen_at = now()). A stored id of another owner is never touched (the WHERE refuses it).
 */
async function upsert(db: Db, table: HistoryTable, owner: 'host_id' | 'service_id', rows: Row[], updatable: string[]): Promise<Map<string, Row>> {
  if (!rows.length) return new Map();
  const t = table.spec.table;
  const cols = Object.keys(rows[0]!);
  const written = await db.query(
    `insert into ${t} (${cols.join(', ')}, last_seen_at)
     select ${cols.join(', ')}, now() from json_populate_recordset(null::${t}, ?::json)
     on conflict (id, organization_id) do update set ${[...updatable.map((c) => `${c} = excluded.${c}`), 'last_seen_at = now()'].join(', ')}
     where ${t}.${owner} = excluded.${owner}
     returning ${table.spec.columns.join(', ')}`,
    [json(rows)],
  );
  if (written.length !== rows.length) throw new Error(`discovery: a ${t} id belongs to another owner`);
  return new Map(written.map((r) => [r.id as string, r]));
}

interface Planned {
  row: Row;
  stored?: Row;
}

/**
 * The children of one kind as planned, for every host of a round: each is written when it is new or
 * one of `compared` differs from what is stored (then with the discovery's id as last_discovery_id),
 * else left as it is. Answers, per host, every planned child as stored afterwards, in order.
 */
async function settle(
  db: Db, table: HistoryTable, owner: 'host_id' | 'service_id', planned: Planned[][], compared: string[], discovery: string | null,
): Promise<{ rows: Row[][]; unchanged: string[] }> {
  // Equal JSON text is equal content (the usual case: an unchanged child keeps the stored objects'
  // key order); only text that differs needs the key-order-free comparison.
  const equal = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b) || canonical(a) === canonical(b);
  const same = (p: Planned) => !!p.stored && compared.every((c) => equal(p.row[c] ?? null, p.stored![c] ?? null));
  const writes = planned.flat().filter((p) => !same(p)).map((p) => ({ ...p.row, last_discovery_id: discovery ?? p.stored?.last_discovery_id ?? null }));
  const written = await upsert(db, table, owner, writes, [...compared, 'last_discovery_id']);
  return {
    rows: planned.map((list) => list.map((p) => table.toResponse(written.get(p.row.id as string) ?? p.stored!))),
    unchanged: planned.flat().filter(same).map((p) => p.row.id as string),
  };
}

/** The children whose presence discovery follows: found again unchanged, they move last_seen_at only. */
const SEEN_CHILDREN = ['ip_addresses', 'ports', 'services'] as const;
type SeenChild = (typeof SEEN_CHILDREN)[number];

/**
 * Moves last_seen_at of unchanged children found again, one statement for every kind (volatile: no
 * history state, no event, and the host's report digest stays).
 */
async function touchSeen(db: Db, ctx: IngestContext, ids: Record<SeenChild, string[]>): Promise<void> {
  const [last, ...others] = SEEN_CHILDREN.filter((k) => ids[k].length);
  if (!last) return;
  const touch = (k: SeenChild) => `update ${k} set last_seen_at = now() where organization_id = ? and id = any(?::uuid[])`;
  await db.query(
    `${others.length ? `with ${others.map((k) => `${k}_seen as (${touch(k)})`).join(', ')} ` : ''}${touch(last)}`,
    [...others, last].flatMap((k) => [ctx.organizationId, ids[k]]),
  );
}

const firstOf = <T>(items: T[], key: (t: T) => string) => {
  const seen = new Map<string, T>();
  for (const item of items) if (!seen.has(key(item))) seen.set(key(item), item);
  return seen;
};

const ipKey = (i: { subnet_id?: unknown; ip_address?: unknown }) => `${i.subnet_id}|${i.ip_address}`;
const portKey = (p: { number?: unknown; protocol?: unknown }) => `${p.number}|${p.protocol}`;
const macKey = (i: { subnet_id?: unknown; mac_address?: unknown }) => (isUsableMac(i.mac_address as string | null) ? `${i.subnet_id}|${i.mac_address}` : null);
const byId = (r: { id?: unknown }) => r.id as string;

/** A report matched to what is stored: its children, paired with the stored ones (pure). */
function matchReport(r: Report, stored: StoredHost | undefined) {
  // Reported children, one per natural key (a daemon listing an address twice means one address).
  const reportedIps = r.d.ip_addresses.map((i, n) => ({ ...i, ip_address: r.addresses[n]!, n }));
  const ips = [...firstOf(reportedIps, ipKey).values()];
  const ports = [...firstOf(r.d.ports, portKey).values()];
  // Which stored child each reported one is: natural key first (two rows never share one), then id.
  const ipMatch = matchChildren<typeof ips[number], Row>(ips, stored?.ip_addresses ?? [], [[ipKey, ipKey], [byId, byId], [macKey, macKey]]);
  const portMatch = matchChildren<DiscoveredPort, Row>(ports, stored?.ports ?? [], [[portKey, portKey], [byId, byId]]);
  const serviceMatch = matchChildren<Discovery['services'][number], Row>(r.d.services, stored?.services ?? [], [
    [byId, byId], [(s) => s.service_definition, (s) => s.service_definition as string],
  ]);
  const newIps = ips.filter((_, k) => !ipMatch[k]);
  const newPorts = ports.filter((_, k) => !portMatch[k]);
  const newServices = r.d.services.filter((_, k) => !serviceMatch[k]);
  // (A report of known children only, from a later run of the daemon, carries new binding ids that
  // mostly match stored bindings: those are checked once the bindings are matched, in step 4.)
  const knownChildren = !!stored && !newIps.length && !newPorts.length && !newServices.length;
  const question: FactsQuestion | undefined = knownChildren ? undefined : {
    h: r.h,
    hostId: (stored?.id as string | undefined) ?? r.d.host.id,
    newHost: !stored,
    ids: [
      ...newIps.map((i) => ({ kind: 'ip' as const, id: i.id })),
      ...newPorts.map((p) => ({ kind: 'port' as const, id: p.id })),
      ...newServices.map((s) => ({ kind: 'service' as const, id: s.id })),
      ...r.d.services.flatMap((s) => s.bindings.map((b) => ({ kind: 'binding' as const, id: b.id }))),
    ],
    serviceIds: [...(stored?.services ?? []).map(byId), ...newServices.map(byId)],
    newIps: newIps.map((i) => ({ n: i.n, subnet_id: i.subnet_id, ip_address: i.ip_address, mac_address: isUsableMac(i.mac_address) ? i.mac_address : null })),
  };
  return { r, stored, reportedIps, ips, ports, ipMatch, portMatch, serviceMatch, question };
}

/** Ids for new rows of a batch: the reported one unless it is used elsewhere, by a stored row, or already in this batch. */
class IdAllocator {
  private readonly unavailable = new Set<string>([NIL]);
  exclude(ids: Iterable<string>) {
    for (const id of ids) this.unavailable.add(id);
  }
  idFor(reported: string): string {
    const id = this.unavailable.has(reported) ? randomUUID() : reported;
    this.unavailable.add(id);
    return id;
  }
}

/**
 * Step 4's plan for one report (pure but for the allocator): the host row to insert or the fields
 * of a stored host to update, and the planned children. A stored host keeps what a user may have set
 * (reference §2.2.4): only an empty hostname is filled, and a Manual host keeps its source.
 */
function planReport(ctx: IngestContext, m: ReturnType<typeof matchReport>, facts: NewFacts | undefined, ids: IdAllocator, pruneFor: string | null = null) {
  const { r: { d }, stored } = m;
  const discovery = ctx.discoveryId ?? null;
  const owned = { organization_id: ctx.organizationId, network_id: ctx.networkId };
  /** first_discovery_id is set once. */
  const first = (s: Row | undefined) => (s?.first_discovery_id as string | null | undefined) ?? discovery;

  let hostId: string;
  let hostInsert: Row | undefined;
  let hostUpdate: Row | undefined;
  if (stored) {
    hostId = stored.id as string;
    const manual = (stored.source as DaemonSource).type === 'Manual';
    const hostname = manual ? stored.hostname : (stored.hostname ?? d.host.hostname);
    // A name discovery gave follows the evidence (a service's name goes with the service); a
    // person's name (name_source null), or any name when the report says nothing of its source, stays.
    const renamed = !manual && stored.name_source != null && d.host.name_source != null;
    hostUpdate = {
      id: hostId,
      name: renamed ? d.host.name : stored.name,
      name_source: renamed ? d.host.name_source : stored.name_source ?? null,
      // What the host is: the report's word when it has one (null keeps what is stored: update below).
      ...d.host.facts,
      hostname,
      // A stored name keeps its source; one that had none learns it from a report of the same name.
      hostname_source: hostname === null ? null
        : stored.hostname === null ? d.host.hostname_source : (stored.hostname_source ?? (stored.hostname === d.host.hostname ? d.host.hostname_source : null)),
      ...Object.fromEntries(Object.entries(d.host.snmp).map(([f, v]) => [f, stored[f] ?? v])),
      source: manual ? stored.source : mergeSource(stored.source as DaemonSource, d.host.source),
      first_discovery_id: first(stored),
      last_discovery_id: discovery ?? stored.last_discovery_id,
    };
  } else {
    hostId = facts?.host_taken || d.host.id === NIL ? randomUUID() : d.host.id;
    hostInsert = {
      id: hostId, ...owned, name: d.host.name, name_source: d.host.name_source, ...d.host.facts, hostname: d.host.hostname, hostname_source: d.host.hostname_source, ...d.host.snmp,
      description: d.host.description, hidden: false, tags: [],
      source: newSource(d.host.source), virtualization: d.host.virtualization ?? null, credential_assignments: [],
      first_discovery_id: discovery, last_discovery_id: discovery, lineage_id: facts?.host_lineage ?? null,
    };
  }
  const onHost = { ...owned, host_id: hostId };
  // A child the report lists is there (one a scan had missed is back).
  const seen = { offline_at: null };
  const nextPosition = (rows: Row[] | undefined) => {
    let next = Math.max(-1, ...(rows ?? []).map((row) => row.position as number)) + 1;
    return () => next++;
  };

  // IP addresses (the daemon's "interfaces"): the reported address, subnet and MAC; an empty name filled.
  const ipLineage = new Map((facts?.ip_lineage ?? []).map((l) => [l.n, l.lineage_id]));
  const nextIpPosition = nextPosition(stored?.ip_addresses);
  const ipPlan: Planned[] = m.ips.map((i, k) => {
    const s = m.ipMatch[k];
    const common = { subnet_id: i.subnet_id, ip_address: i.ip_address, first_discovery_id: first(s) };
    const mac = i.mac_address ?? (s?.mac_address as string | null | undefined) ?? null;
    // The vendor as reported, else as stored; whether the MAC is random follows from the MAC itself (never from a report's flag).
    const vendor = { mac_vendor: i.mac_vendor ?? s?.mac_vendor ?? null, mac_random: mac ? isLocallyAdministered(mac) : null };
    return s
      ? { stored: s, row: { ...onHost, ...seen, ...common, ...vendor, id: s.id, mac_address: mac, name: s.name ?? i.name, position: s.position, lineage_id: s.lineage_id } }
      : { row: { ...onHost, ...seen, ...common, ...vendor, id: ids.idFor(i.id), mac_address: mac, name: i.name, position: nextIpPosition(), lineage_id: ipLineage.get(i.n) ?? null } };
  });

  // Ports: identified by (number, protocol) on the host; the type follows from them.
  const portPlan: Planned[] = m.ports.map((p, k) => {
    const s = m.portMatch[k];
    return {
      stored: s,
      row: {
        ...onHost, ...seen, id: s ? (s.id as string) : ids.idFor(p.id), number: p.number, protocol: p.protocol, type: portType(p.number, p.protocol),
        first_discovery_id: first(s), lineage_id: s?.lineage_id ?? null,
      },
    };
  });

  // Interfaces (SNMP if_entries): one per if_index (the first reported wins), merged into the stored
  // one; an entry the report leaves out stays (a walk cut short never erases). New ones get fresh
  // ids: an entry is its host's if_index, and daemons never refer to one by id.
  const plannedIpOfKey = new Map(m.ips.map((i, k) => [ipKey(i), ipPlan[k]!.row.id as string]));
  const ipRowOfReported = new Map(m.reportedIps.map((i) => [i.id, plannedIpOfKey.get(ipKey(i))!]));
  const ipOfMac = new Map<string, string>();
  for (const row of [...ipPlan.map((p) => p.row), ...(stored?.ip_addresses ?? [])]) {
    if (row.mac_address && !ipOfMac.has(row.mac_address as string)) ipOfMac.set(row.mac_address as string, row.id as string);
  }
  const linkTo = { byReportedId: (id: string) => ipRowOfReported.get(id), byMac: (mac: string) => ipOfMac.get(mac) };
  const storedIfOf = new Map((stored?.interfaces ?? []).map((i) => [i.if_index as number, i]));
  const fdbPartial = d.collections.fdb === 'partial';
  const interfacePlan: Planned[] = [...firstOf(d.interfaces, (e) => String(e.if_index)).values()].map((e) => {
    const s = storedIfOf.get(e.if_index);
    return {
      stored: s,
      row: {
        ...onHost, id: s ? s.id : randomUUID(), ...mergeIfEntry(e, s, linkTo, fdbPartial), neighbor: s?.neighbor ?? null,
        first_discovery_id: first(s), lineage_id: s?.lineage_id ?? null,
      },
    };
  });

  // Services: a stored one keeps its name, definition, position and tags; its source merges, its virtualization is filled when empty.
  const nextServicePosition = nextPosition(stored?.services);
  const servicePlan: Planned[] = d.services.map((svc, k) => {
    const s = m.serviceMatch[k];
    return s
      ? {
        stored: s,
        row: {
          ...onHost, ...seen, id: s.id, name: s.name, service_definition: s.service_definition, position: s.position, tags: s.tags, lineage_id: s.lineage_id,
          source: mergeSource(s.source as DaemonSource, svc.source), virtualization: s.virtualization ?? svc.virtualization, first_discovery_id: first(s),
        },
      }
      : {
        row: {
          ...onHost, ...seen, id: ids.idFor(svc.id), name: svc.name, service_definition: svc.service_definition, position: nextServicePosition(), tags: [], lineage_id: null,
          source: newSource(svc.source, 'DiscoveryWithMatch'), virtualization: svc.virtualization, first_discovery_id: discovery,
        },
      };
  });

  // Bindings: re-pointed at the stored ports and addresses (a reported duplicate is the row its
  // natural key is; a binding may also name a stored child by its id); one that breaks a rule is dropped.
  const ipByKey = new Map(m.ips.map((i, k) => [ipKey(i), ipPlan[k]!.row.id as string]));
  const ipIdOf = new Map(m.reportedIps.map((i) => [i.id, ipByKey.get(ipKey(i))!]));
  const portByKey = new Map(m.ports.map((p, k) => [portKey(p), portPlan[k]!.row.id as string]));
  const portIdOf = new Map(d.ports.map((p) => [p.id, portByKey.get(portKey(p))!]));
  const resolver = (map: Map<string, string>, rows: Row[] | undefined) => (id: string) => map.get(id) ?? (rows?.some((row) => row.id === id) ? id : undefined);
  const reportedBindings = d.services.flatMap((svc, k) => svc.bindings
    .map((b) => bindingFacts(b, servicePlan[k]!.row.id as string, resolver(portIdOf, stored?.ports), resolver(ipIdOf, stored?.ip_addresses)))
    .filter((b): b is BindingFact => b !== null));
  // The bindings of services this report shows stopped (deleted once the round is written) bind no
  // port any more: a port whose service changed (HTTP, then a product's rule) goes to the new one.
  const stopped = new Set(pruneFor ? stoppedServiceIds(m, pruneFor) : []);
  const liveBindings = (stored?.bindings ?? []).filter((b) => !stopped.has(b.service_id));
  const storedBindings = new Set<BindingFact>(liveBindings);
  const accepted = [...new Set(acceptBindings(liveBindings, reportedBindings).filter((b): b is BindingFact => b !== null))];
  /** Binding ids of a report of known children only, not yet checked against other owners. */
  const uncheckedBindingIds = m.question ? [] : accepted.filter((b) => !storedBindings.has(b)).map(byId);
  const planBindings = (): Planned[] => accepted.map((b) => {
    const s = storedBindings.has(b) ? (b as BindingFact & Row) : undefined;
    return {
      stored: s,
      row: {
        ...owned, id: s ? b.id : ids.idFor(b.id), service_id: b.service_id, type: b.type, port_id: b.port_id, ip_address_id: b.ip_address_id,
        first_discovery_id: first(s), lineage_id: s?.lineage_id ?? null,
      },
    };
  });
  return { h: m.r.h, hostInsert, hostUpdate, ipPlan, portPlan, interfacePlan, servicePlan, uncheckedBindingIds, serviceIds: servicePlan.map((p) => p.row.id as string), planBindings };
}

/** Step 4 for a round: the hosts, then each kind of child, one statement each. */
async function writeRound(db: Db, ctx: IngestContext, plans: Array<ReturnType<typeof planReport>>, ids: IdAllocator): Promise<Map<number, StoredDiscovery>> {
  const discovery = ctx.discoveryId ?? null;
  const hostColumns = hostTable.spec.columns.join(', ');
  const inserts = plans.flatMap((p) => (p.hostInsert ? [p.hostInsert] : []));
  const updates = plans.flatMap((p) => (p.hostUpdate ? [p.hostUpdate] : []));
  const hosts = new Map<string, Row>();
  if (inserts.length) {
    const rows = await db.query(
      `insert into hosts (${Object.keys(inserts[0]!).join(', ')}, last_seen_at)
       select ${Object.keys(inserts[0]!).join(', ')}, now() from json_populate_recordset(null::hosts, ?::json)
       returning ${hostColumns}`,
      [json(inserts)],
    );
    for (const row of rows) hosts.set(row.id as string, row);
  }
  if (updates.length) {
    const rows = await db.query(
      `update hosts h set name = x.name, name_source = x.name_source, ${HOST_FACT_FIELDS.map((f) => `${f} = coalesce(x.${f}, h.${f})`).join(', ')}, hostname = x.hostname, hostname_source = x.hostname_source, sys_descr = x.sys_descr, sys_object_id = x.sys_object_id,
                          sys_location = x.sys_location, sys_contact = x.sys_contact, chassis_id = x.chassis_id,
                          source = x.source, first_discovery_id = x.first_discovery_id, last_discovery_id = x.last_discovery_id, last_seen_at = now()
       from json_populate_recordset(null::hosts, ?::json) x where h.organization_id = ? and h.id = x.id
       returning ${hostColumns.split(', ').map((c) => `h.${c}`).join(', ')}`,
      [json(updates), ctx.organizationId],
    );
    for (const row of rows) hosts.set(row.id as string, row);
  }

  const ips = await settle(db, ipAddressTable, 'host_id', plans.map((p) => p.ipPlan), ['subnet_id', 'ip_address', 'mac_address', 'mac_vendor', 'mac_random', 'name', 'offline_at', 'first_discovery_id'], discovery);
  const { rows: interfaceRows } = await settle(db, interfaceTable, 'host_id', plans.map((p) => p.interfacePlan), [...IF_ENTRY_COLUMNS, 'first_discovery_id'], discovery);
  const ports = await settle(db, portTable, 'host_id', plans.map((p) => p.portPlan), ['number', 'protocol', 'type', 'offline_at', 'first_discovery_id'], discovery);
  const services = await settle(db, serviceTable, 'host_id', plans.map((p) => p.servicePlan), ['source', 'virtualization', 'offline_at', 'first_discovery_id'], discovery);
  await touchSeen(db, ctx, { ip_addresses: ips.unchanged, ports: ports.unchanged, services: services.unchanged });
  const [ipRows, portRows, serviceRows] = [ips.rows, ports.rows, services.rows];

  // New binding ids of reports of known children: one check against other owners for the round.
  const unchecked = plans.filter((p) => p.uncheckedBindingIds.length);
  if (unchecked.length) {
    const taken = await db.query<{ id: string }>(
      `select distinct t.id from json_to_recordset(?::json) as q(id uuid, service_ids uuid[]) join bindings_history t on t.organization_id = ? and t.id = q.id
       where not (t.service_id = any(q.service_ids)) or t.network_id <> ?`,
      [json(unchecked.flatMap((p) => p.uncheckedBindingIds.map((id) => ({ id, service_ids: p.serviceIds })))), ctx.organizationId, ctx.networkId],
    );
    const theirs = await idsOfOtherOrganizations(db, ctx, unchecked.flatMap((p) => p.uncheckedBindingIds.map((id) => ({ h: p.h, kind: 'binding', id }))));
    ids.exclude([...taken, ...theirs].map((t) => t.id));
  }
  const { rows: bindingRows } = await settle(db, bindingTable, 'service_id', plans.map((p) => p.planBindings()), ['first_discovery_id'], discovery);

  return new Map(plans.map((p, k) => {
    const host = hosts.get((p.hostInsert ?? p.hostUpdate)!.id as string)!;
    return [p.h, {
      host: hostTable.toResponse(host),
      ip_addresses: ipRows[k]!,
      ports: portRows[k]!,
      services: serviceRows[k]!.map((s) => ({ ...s, bindings: bindingRows[k]!.filter((b) => b.service_id === s.id) })),
      interfaces: interfaceRows[k]!,
    }];
  }));
}

/**
 * What decides a report's outcome against an unchanged stored state: the report as sent, whether it
 * names a discovery session (a first one fills first_discovery_id), and whose stopped services it
 * takes offline (a Network session's daemon, else none). The same content in another key order is merely a miss.
 */
function reportDigest(ctx: IngestContext, request: DaemonHostRequest, pruneFor: string | null): string {
  return createHash('sha256').update(ctx.discoveryId ? 'session\n' : 'none\n').update(`prune:${pruneFor ?? ''}\n`).update(JSON.stringify(request)).digest('base64url');
}

/**
 * The daemon whose stopped services a report takes offline: the reporting daemon when the report belongs
 * to a Network session of it. Never for SelfReport or Docker sessions (a Docker session reports
 * several payloads per host, each with part of its services), nor for a report of no session.
 */
async function pruningDaemon(db: Db, ctx: IngestContext): Promise<string | null> {
  if (!ctx.discoveryId) return null;
  const session = await db.one<{ type: string | null }>(
    `select discovery_type->>'type' as type from discovery_sessions where id = ? and organization_id = ? and daemon_id = ?`, [ctx.discoveryId, ctx.organizationId, ctx.daemonId],
  );
  return session?.type === 'Network' ? ctx.daemonId : null;
}

/** Found by nothing but network scans of this daemon: a DiscoveryWithMatch source whose every metadata entry is one. */
function onlyFoundByNetworkScansOf(source: DaemonSource | null | undefined, daemonId: string): boolean {
  const metadata = source?.type === 'DiscoveryWithMatch' && Array.isArray(source.metadata) ? (source.metadata as Array<{ type?: unknown; daemon_id?: unknown }>) : [];
  return metadata.length > 0 && metadata.every((m) => m?.type === 'Network' && m.daemon_id === daemonId);
}

/** Whether the report comes from a network scan of this daemon (its host's metadata says so). */
function fromNetworkScanOf(m: ReturnType<typeof matchReport>, daemonId: string): boolean {
  const reported = Array.isArray(m.r.d.host.source?.metadata) ? (m.r.d.host.source.metadata as Array<{ type?: unknown; daemon_id?: unknown }>) : [];
  return !!m.stored && reported.some((x) => x?.type === 'Network' && x.daemon_id === daemonId);
}

/**
 * Stopped services and closed ports: of a stored host a Network session reported, the services the
 * report does not list and that only this daemon's network scans found (never a Manual or System
 * one, nor one another daemon or another kind of discovery also found) go offline, and so do the
 * ports discovery found that the report does not list and that no other service is bound to. Their
 * bindings are deleted (the service no longer answers on that port; history keeps them); the rows
 * stay, offline, and are online again when a report lists them. The report itself must say it comes
 * from a network scan of this daemon: a server_poll daemon re-sends unconfirmed entities of an
 * earlier session, a Docker run's among them, during the next one. Runs before the round's digests
 * are remembered (the writes' triggers forget the host's old digest). One statement per round.
 */
async function markStopped(db: Db, ctx: IngestContext, matched: Array<ReturnType<typeof matchReport>>, daemonId: string): Promise<void> {
  const services = matched.flatMap((m) => stoppedServiceIds(m, daemonId));
  const ports = matched.flatMap((m) => closedPortIds(m, daemonId, new Set(services)));
  if (!services.length && !ports.length) return;
  await db.query(
    `with unbound as (delete from bindings where organization_id = ? and service_id = any(?::uuid[])),
          closed as (update ports set offline_at = now(), last_discovery_id = coalesce(?::uuid, last_discovery_id)
                     where organization_id = ? and id = any(?::uuid[]) and offline_at is null)
     update services set offline_at = now(), last_discovery_id = coalesce(?::uuid, last_discovery_id)
     where organization_id = ? and id = any(?::uuid[]) and offline_at is null`,
    [ctx.organizationId, services, ctx.discoveryId ?? null, ctx.organizationId, ports, ctx.discoveryId ?? null, ctx.organizationId, services],
  );
}

/** The stored services of a matched report that markStopped takes offline (planReport leaves their bindings out). */
function stoppedServiceIds(m: ReturnType<typeof matchReport>, daemonId: string): string[] {
  if (!fromNetworkScanOf(m, daemonId)) return [];
  const listed = new Set(m.serviceMatch.flatMap((s) => (s ? [s.id] : [])));
  return m.stored!.services.filter((s) => !listed.has(s.id) && onlyFoundByNetworkScansOf(s.source as DaemonSource, daemonId)).map(byId);
}

/** The stored ports discovery found that the report does not list, bound to no service but stopped ones. */
function closedPortIds(m: ReturnType<typeof matchReport>, daemonId: string, stopped: Set<string>): string[] {
  if (!fromNetworkScanOf(m, daemonId)) return [];
  const listed = new Set(m.portMatch.flatMap((p) => (p ? [p.id] : [])));
  const kept = new Set<unknown>(m.stored!.bindings.filter((b) => !stopped.has(b.service_id as string)).map((b) => b.port_id));
  return m.stored!.ports.filter((p) => !listed.has(p.id) && p.last_seen_at != null && p.offline_at == null && !kept.has(p.id)).map(byId);
}

/**
 * Unchanged hosts: for the reports whose digest is their host's, the host's last_seen_at and
 * last_discovery_id move (hosts locked in id order), so does the last_seen_at of the addresses,
 * ports and services of the stored answer (what the same report found last time), and the stored
 * answers come back, by digest. One statement.
 */
/** The children a stored answer lists (discoveryToDaemon: the daemon calls addresses "interfaces"). */
const TOUCHED_IN_ANSWER: Array<[SeenChild, string]> = [['ip_addresses', 'interfaces'], ['ports', 'ports'], ['services', 'services']];

async function touchUnchanged(db: Db, ctx: IngestContext, digests: string[]): Promise<Map<string, { id: string; answer: string }>> {
  if (!digests.length) return new Map();
  const [sql, params] = bind(
    `with hit as (
       select h.id, d.digest, d.response from hosts h join host_discovery_digests d on d.host_id = h.id
       where h.organization_id = {org} and d.organization_id = {org} and d.network_id = {network} and d.digest = any({digests}::text[])
       order by h.id for update of h),
     touched as (
       update hosts h set last_seen_at = now(), last_discovery_id = coalesce({discovery}::uuid, h.last_discovery_id)
       from hit where h.organization_id = {org} and h.id = hit.id
       returning h.id, hit.digest, hit.response),
     answer as materialized (select t.response::jsonb as r from touched t),
     ${TOUCHED_IN_ANSWER.map(([table, key]) => `${table}_ids as materialized (select (e->>'id')::uuid as id from answer a, jsonb_array_elements(a.r->'${key}') e),
     ${table}_seen as (update ${table} set last_seen_at = now() where organization_id = {org} and id in (select id from ${table}_ids))`).join(',\n     ')}
     select id, digest, response from touched`,
    { network: ctx.networkId, digests, discovery: ctx.discoveryId ?? null, org: ctx.organizationId },
  );
  const rows = await db.query<{ id: string; digest: string; response: string }>(sql, params);
  return new Map(rows.map((r) => [r.digest, { id: r.id, answer: r.response }]));
}

/** After a round: each host's digest becomes that of the report just applied to it, with its answer. */
async function rememberDigests(db: Db, ctx: IngestContext, applied: Array<{ host_id: string; digest: string; response: string }>): Promise<void> {
  if (!applied.length) return;
  await db.query(
    `insert into host_discovery_digests (host_id, organization_id, network_id, digest, response)
     select x.host_id, ?, ?, x.digest, x.response from json_to_recordset(?::json) as x(host_id uuid, digest text, response text)
     on conflict (host_id, organization_id) do update set digest = excluded.digest, response = excluded.response`,
    [ctx.organizationId, ctx.networkId, json(applied)],
  );
}

/** A stored host, and the answer to its report: the daemon's HostResponse as JSON text (kept as text: mostly it is only passed on). */
export interface IngestedHost {
  id: string;
  answer: string;
}

/**
 * Reported hosts with their children (reference §2.2), in one transaction: each matched to the
 * stored host it is, merged without overwriting what a user set, created when new. Answers, per
 * report, the stored host and the answer to the daemon (the host with the children of the request,
 * `if_entries: []`; also kept in host_discovery_digests until the host changes), or the error that
 * refused that report alone (foreign network, unknown subnet, address out of range). Replaying a
 * batch changes nothing.
 */
export async function ingestHosts(db: Db, ctx: IngestContext, requests: DaemonHostRequest[]): Promise<Array<IngestedHost | AppError>> {
  const results = new Array<IngestedHost | AppError>(requests.length);
  const discoveries: Discovery[] = [];
  const positions: number[] = [];
  requests.forEach((request, k) => {
    if (request.host.network_id !== ctx.networkId) results[k] = new AppError('daemon_network_mismatch', { network_id: request.host.network_id });
    else {
      discoveries.push(discoveryFromDaemon(request));
      positions.push(k);
    }
  });
  if (!discoveries.length) return results;

  await db.transaction(async (tx) => {
    const checked = await lockAndCheck(tx, ctx, discoveries);
    let pending: Report[] = [];
    checked.forEach((addresses, h) => {
      if (addresses instanceof AppError) results[positions[h]!] = addresses;
      else pending.push({ h, d: discoveries[h]!, addresses });
    });

    // Unchanged hosts. A report that shares an identity key with another of the batch takes the
    // full path (their order matters there).
    const keysOf = new Map(pending.map((r) => [r.h, identityKeys(ctx, r)]));
    const keys = (r: Report) => keysOf.get(r.h)!;
    const pruneFor = await pruningDaemon(tx, ctx);
    const digestOf = new Map(pending.map((r) => [r.h, reportDigest(ctx, requests[positions[r.h]!]!, pruneFor)]));
    const answers = await touchUnchanged(tx, ctx, loneReports(pending, keys).map((r) => digestOf.get(r.h)!));
    pending = pending.filter((r) => {
      const hit = answers.get(digestOf.get(r.h)!);
      if (hit) results[positions[r.h]!] = hit;
      return !hit;
    });

    const ids = new IdAllocator();
    const newRows: Record<FollowedTable, number> = {
      hosts_history: 0, ip_addresses_history: 0, ports_history: 0, services_history: 0, bindings_history: 0, hosts: 0, host_discovery_digests: 0,
    };
    while (pending.length) {
      let { round, later } = nextRound(pending, keys);
      // Two reports of the round that turn out to be one stored host: the later waits a round.
      const found = await findHosts(tx, ctx, round);
      const { deferred } = claimStoredHosts(found.map((s) => [s.h, s.id as string]));
      const storedOf = new Map(found.filter((s) => !deferred.has(s.h)).map((s) => [s.h, s]));
      if (deferred.size) {
        later = [...later, ...round.filter((r) => deferred.has(r.h))].sort((a, b) => a.h - b.h);
        round = round.filter((r) => !deferred.has(r.h));
      }

      const matched = round.map((r) => matchReport(r, storedOf.get(r.h)));
      for (const m of matched) {
        if (m.stored) ids.exclude([...m.stored.ip_addresses, ...m.stored.ports, ...m.stored.services, ...m.stored.bindings].map(byId));
      }
      const facts = await newFacts(tx, ctx, matched.flatMap((m) => (m.question ? [m.question] : [])));
      for (const f of facts.values()) ids.exclude(f.taken);
      const plans = matched.map((m) => planReport(ctx, m, facts.get(m.r.h), ids, pruneFor));
      countNewRows(newRows, plans, matched);
      const written = await writeRound(tx, ctx, plans, ids);
      if (pruneFor) await markStopped(tx, ctx, matched, pruneFor);
      const applied: Array<{ host_id: string; digest: string; response: string }> = [];
      for (const [h, stored] of written) {
        const ingested = { id: stored.host.id as string, answer: JSON.stringify(discoveryToDaemon(stored)) };
        results[positions[h]!] = ingested;
        applied.push({ host_id: ingested.id, digest: digestOf.get(h)!, response: ingested.answer });
      }
      await rememberDigests(tx, ctx, applied);
      pending = later;
    }
    await followNetworkGrowth(tx, ctx, newRows);
    await adoptSelfReportedHosts(tx, ctx, positions.flatMap((k) => {
      const result = results[k];
      return result && !(result instanceof AppError) ? [{ request: requests[k]!, hostId: result.id }] : [];
    }));
  });
  return results;
}

/** One reported host (the daemon's synchronous `POST /api/v1/hosts/discovery`): its error is the request's. */
export async function ingestHost(db: Db, ctx: IngestContext, request: DaemonHostRequest): Promise<ReturnType<typeof discoveryToDaemon>> {
  const [result] = await ingestHosts(db, ctx, [request]);
  if (result instanceof AppError) throw result;
  return JSON.parse(result!.answer) as ReturnType<typeof discoveryToDaemon>;
}
