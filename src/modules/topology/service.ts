// The topology of one network at one instant: the inventory read once (live tables, or the
// history tables as of `at`: one statement per table), then drawn by the pure graph.ts.
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import type { Queue } from 'bullmq';
import { chooseCollapsed, emptyFilteredOut, MAX_NODES_CAP, type FilteredOut, type Snapshot, type View } from './graph.js';
import { layoutFor, readPins, storeLayout, type Box } from './layout.js';
import { changeVersion, GraphCache } from './graphCache.js';
import { EXPORT_FORMATS, type ExportFormat } from './export.js';
import { exportFileName } from './exportName.js';
import { cpuPool } from './pool.js';
import { POSITIONED, type GraphJson, type SnapshotRows, type SnapshotText, type TaskInput, type TaskName, type TaskOutput } from './thread.js';
import { asJsonTexts, fromJsonTexts, READ_SETTINGS, type SnapshotRead } from './threadReads.js';
import { AppError } from '../../core/errors.js';
import { UUID } from '../../core/principal.js';
import { MAX_DIFF_CHANGES, MAX_TICKS, TIMELINE_MAX_DRAWN } from './bounds.js';
import { FileResponse } from '../../http/envelope.js';
import { JsonText } from '../../http/jsonText.js';
import type { HeavyReadBudget } from './heavyReadBudget.js';

/** What each table contributes (only the columns a view draws). */
const COLUMNS = {
  subnets: 'id, cidr, name, subnet_type',
  hosts: 'id, name, hostname, hidden, tags, virtualization, chassis_id, device_type, offline_at',
  ip_addresses: 'id, host_id, subnet_id, ip_address, position, mac_address, offline_at',
  ports: 'id, host_id, number, protocol',
  services: 'id, host_id, name, service_definition, position, tags, virtualization, offline_at',
  bindings: 'id, service_id, type, port_id, ip_address_id',
  interfaces: 'id, host_id, if_index, if_name, if_descr, if_alias, mac_address, oper_status, lldp_sys_name, lldp_port_id, cdp_device_id, cdp_port_id, neighbor, lldp_chassis_id, lldp_port_desc, fdb_macs',
  dependencies: 'id, name, color, dependency_type, edge_style, members',
} as const;

/** Two instants read in one pass (a diff): each row says at which of them it was valid. */
type Instants = [string, string];
/**
 * Every instant of a timeline read in one pass: the rows valid at any time in [first, last], each
 * with its validity as text (UTC, microseconds, the format of the ticks) to split by instant.
 */
interface Span { first: string; last: string }
const US = (column: string) => `to_char(${column} at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
type When = string | Instants | Span | undefined;
const isSpan = (at: When): at is Span => typeof at === 'object' && !Array.isArray(at);
/** The columns sourceOf adds to say when a row was valid: flags for two instants, the period for a span. */
const validityColumns = (at: When) => (Array.isArray(at) ? ', at_first, at_second' : isSpan(at) ? ', v_from, v_to' : '');

/**
 * A table's rows of the network (without a network: of the organization, for tags), live, as of
 * `at`, or valid at either of two instants (flagged `at_first`, `at_second`), as a subquery and its
 * parameters. The organization is always named: on a partitioned schema each read is one partition.
 */
function sourceOf(table: string, organizationId: string, networkId: string | undefined, at: When): [string, unknown[]] {
  const owner = networkId === undefined ? 'organization_id = ?' : 'organization_id = ? and network_id = ?';
  const ownerParams = networkId === undefined ? [organizationId] : [organizationId, networkId];
  if (isSpan(at)) {
    return [
      `(select *, ${US('valid_from')} as v_from, ${US('valid_to')} as v_to from ${table}_history where ${owner} and valid_from <= ?::timestamptz and (valid_to is null or valid_to > ?::timestamptz))`,
      [...ownerParams, at.last, at.first],
    ];
  }
  if (Array.isArray(at)) {
    const valid = 'tstzrange(valid_from, valid_to) @> ?::timestamptz';
    return [
      `(select *, ${valid} as at_first, ${valid} as at_second from ${table}_history where ${owner} and (${valid} or ${valid}))`,
      [at[0], at[1], ...ownerParams, at[0], at[1]],
    ];
  }
  return at
    ? [`(select * from ${table}_history where ${owner} and tstzrange(valid_from, valid_to) @> ?::timestamptz)`, [...ownerParams, at]]
    : [`(select * from ${table} where ${owner})`, ownerParams];
}

/** A table's read as a statement and its parameters. `hostIds`: only these hosts and their children (the budgeted read); undefined: the whole network. */
function rowsOf(table: keyof typeof COLUMNS, organizationId: string, networkId: string, at: When, hostIds?: string[]): [string, unknown[]] {
  // host(ip_address) prints an address without its /32 (the column is inet).
  const columns = table === 'ip_addresses' ? COLUMNS[table].replace('ip_address,', 'host(ip_address) as ip_address,') : COLUMNS[table];
  const cols = `${columns}${validityColumns(at)}`;
  const [src, params] = sourceOf(table, organizationId, networkId, at);
  if (!hostIds || table === 'subnets' || table === 'dependencies') return [`select ${cols} from ${src} t`, params];
  if (table === 'hosts') return [`select ${cols} from ${src} t where id = any(?::uuid[])`, [...params, hostIds]];
  if (table === 'bindings') {
    const [services, sp] = sourceOf('services', organizationId, networkId, at);
    return [`select ${cols} from ${src} t where service_id in (select id from ${services} s where host_id = any(?::uuid[]))`, [...params, ...sp, hostIds]];
  }
  return [`select ${cols} from ${src} t where host_id = any(?::uuid[])`, [...params, hostIds]];
}

const tagsOf = (organizationId: string, at: When) => sourceOf('tags', organizationId, undefined, at);

/** Every table's read of a snapshot, by the Snapshot's names. */
function snapshotReads(organizationId: string, networkId: string, at: When, hostIds?: string[]): Record<keyof Snapshot, [string, unknown[]]> {
  const rows = (t: keyof typeof COLUMNS) => rowsOf(t, organizationId, networkId, at, hostIds);
  const tags = tagsOf(organizationId, at);
  return {
    subnets: rows('subnets'), hosts: rows('hosts'), ipAddresses: rows('ip_addresses'), ports: rows('ports'), services: rows('services'),
    bindings: rows('bindings'), interfaces: rows('interfaces'), dependencies: rows('dependencies'),
    tags: [`select id, name, color, is_application${validityColumns(at)} from ${tags[0]} t`, tags[1]],
  };
}

export async function readSnapshot(db: Db, organizationId: string, networkId: string, at: When, hostIds?: string[]): Promise<Snapshot> {
  const reads = Object.entries(snapshotReads(organizationId, networkId, at, hostIds));
  const rows = await Promise.all(reads.map(([, [sql, params]]) => db.query(sql, params)));
  return Object.fromEntries(reads.map(([k], i) => [k, rows[i]])) as unknown as Snapshot;
}

/**
 * readSnapshot for a task: each table's rows as one JSON text made by PostgreSQL, so
 * the reader decodes one string per table instead of parsing every row (the pg driver's row
 * parsing held the event loop 150–230 ms on a 3,000-node view). The values are the driver's:
 * every column read is text, uuid, uuid[], integer, boolean or jsonb (inet via host(), instants
 * via to_char).
 */
export async function readSnapshotText(db: Db, organizationId: string, networkId: string, at: When, hostIds?: string[]): Promise<SnapshotText> {
  const reads = Object.entries(snapshotReads(organizationId, networkId, at, hostIds));
  const row = await db.one(...asJsonTexts(reads.map(([, read]) => read)));
  return fromJsonTexts(reads.map(([table]) => table), row!) as SnapshotText;
}

/** The tables whose rows become element nodes (thread.ts elementRows): what a drawing's work grows with. */
const ELEMENT_TABLES = ['hosts', 'ip_addresses', 'services', 'interfaces'] as const;

/** How many element rows a read holds, counted in SQL (only the count leaves PostgreSQL). */
async function countElements(db: Db, organizationId: string, networkId: string, at: When, hostIds?: string[]): Promise<number> {
  const reads = ELEMENT_TABLES.map((t) => rowsOf(t, organizationId, networkId, at, hostIds));
  const row = await db.one<{ n: number }>(`select (${reads.map(([sql]) => `(select count(*) from (${sql}) c)`).join(' + ')})::int as n`, reads.flatMap(([, p]) => p));
  return row!.n;
}

/**
 * The rows of a task of `size`: read here when the task runs inline, else where its thread reads
 * them itself, in this transaction's snapshot (threadReads.ts says why the event loop no longer
 * carries them). `db` is in a snapshot transaction (readTransaction) for the thread to import.
 */
async function rowsFor(db: Db, task: TaskName, size: number, organizationId: string, networkId: string, at: When, hostIds?: string[]): Promise<SnapshotRows> {
  if (cpuPool().runsInline(task, size)) return readSnapshotText(db, organizationId, networkId, at, hostIds);
  const { id } = (await db.one<{ id: string }>(`select pg_export_snapshot() as id`))!;
  const reads = Object.entries(snapshotReads(organizationId, networkId, at, hostIds)).map(([table, [sql, params]]) => [table, sql, params]);
  return { url: String(db.em.config.get('clientUrl')), snapshot: id, reads } as SnapshotRead;
}

/** The network's inventory as of `at` (now when absent). Tenancy: the caller checked the network. */
export async function loadSnapshot(db: Db, organizationId: string, networkId: string, at?: string, hostIds?: string[]): Promise<Snapshot> {
  return readSnapshot(db, organizationId, networkId, at, hostIds);
}

/** The rows valid anywhere between the first and the last of `ticks`, each with its validity (v_from, v_to). */
const span = (ticks: string[]): Span => ({ first: ticks[0]!, last: ticks[ticks.length - 1]! });

/**
 * The views with something to draw, asked of SQL (the budgeted read does not hold the whole
 * network): l3 always; workloads with a service; application with a service carrying an application
 * tag; l2 with neighbour data on an interface (LLDP/CDP or a resolved neighbour) or a forwarding table.
 */
async function availableViewsOf(db: Db, organizationId: string, networkId: string, at: string | undefined): Promise<View[]> {
  const [services, sp] = sourceOf('services', organizationId, networkId, at);
  const [interfaces, ip] = sourceOf('interfaces', organizationId, networkId, at);
  const tags = tagsOf(organizationId, at);
  // application: from the organization's few application tags to a service carrying one (the
  // other way round scanned every service of the network when there was no application tag: 30–40 ms as of an instant).
  const row = await db.one<{ workloads: boolean; application: boolean; l2: boolean }>(
    `select exists (select 1 from ${services} s) as workloads,
            exists (select 1 from ${tags[0]} t where t.is_application and exists (select 1 from ${services} s where t.id = any(s.tags))) as application,
            exists (select 1 from ${interfaces} i where i.neighbor is not null or i.lldp_sys_name is not null or i.cdp_device_id is not null
                                                     or i.lldp_chassis_id is not null or i.fdb_macs <> '[]') as l2`,
    [...sp, ...tags[1], ...sp, ...ip],
  );
  return (['l3', 'workloads', 'application', 'l2'] as const).filter((v) => v === 'l3' || row![v]);
}

/**
 * The l3 view within its budget without drawing what it would collapse (the budgeted
 * graph of 10,000 hosts read and drew every host): elements per subnet counted in SQL, the
 * collapsed subnets chosen by the same rule as the drawing's (chooseCollapsed), then only the
 * hosts with an element left open, or serving a dependency, read and drawn. Undefined when the
 * whole view fits (the plain read is then as cheap).
 */
async function budgetedL3<K extends DrawTask>(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined, task: K): Promise<TaskOutput<K> | undefined> {
  const [hosts, hp] = sourceOf('hosts', organizationId, q.network_id, at);
  const [ips, ip] = sourceOf('ip_addresses', organizationId, q.network_id, at);
  const [subnets, sp] = sourceOf('subnets', organizationId, q.network_id, at);
  const tags = q.tag_ids?.length ? q.tag_ids : null;
  // Visible hosts: as visibleHosts() in graph.ts decides. Each source is read once (materialized):
  // as of `at` each is a range scan of a history table.
  const visible = `v as materialized (select id from ${hosts} h where (? or not h.hidden) and (?::uuid[] is null or h.tags && ?::uuid[]))`;
  const vp = [...hp, q.include_hidden, tags, tags];
  const addresses = `i as materialized (select host_id, subnet_id from ${ips} x)`;
  const counts = await db.query<{ subnet_id: string | null; n: number }>(
    `with ${visible}, ${addresses}, s as materialized (select id from ${subnets} y)
     select case when i.subnet_id in (select id from s) then i.subnet_id end as subnet_id, count(*)::int as n
     from i join v on v.id = i.host_id group by 1
     union all
     select null, count(*)::int from v where not exists (select 1 from i where i.host_id = v.id)`,
    [...vp, ...ip, ...sp],
  );
  const total = counts.reduce((sum, r) => sum + r.n, 0);
  if (total <= q.max_nodes) return undefined;
  const filteredOut = emptyFilteredOut();
  const filters = await db.one<{ hidden: number; untagged: number }>(
    `select count(*) filter (where hidden and not ?)::int as hidden,
            count(*) filter (where (? or not hidden) and ?::uuid[] is not null and not (tags && ?::uuid[]))::int as untagged
     from ${hosts} h`,
    [q.include_hidden, q.include_hidden, tags, tags, ...hp],
  );
  filteredOut.hidden_hosts = filters!.hidden;
  filteredOut.hosts_without_tag = filters!.untagged;
  const perSubnet = new Map(counts.filter((r) => r.subnet_id).map((r) => [`subnet:${r.subnet_id}`, r.n]));
  const chosen = chooseCollapsed(perSubnet, total, { maxNodes: q.max_nodes, expand: q.expand }, filteredOut);
  const collapsedIds = [...chosen].map((id) => id.slice('subnet:'.length));
  // The hosts still drawn: an address outside the collapsed subnets, or none; and every host of a
  // dependency's member service (its edges end at a collapsed subnet or at one of its nodes).
  // One outer join, not `not exists (…) or exists (…)`: PostgreSQL cannot turn a NOT EXISTS under
  // an OR into an anti-join, and ran it as a scan of the addresses per host (397 s at 100,000 hosts,
  // bench/README.md, growth curve; 436 ms as a join on that database).
  const [services, svp] = sourceOf('services', organizationId, q.network_id, at);
  const [bindings, bp] = sourceOf('bindings', organizationId, q.network_id, at);
  const [deps, dp] = sourceOf('dependencies', organizationId, q.network_id, at);
  const rows = await db.query<{ id: string }>(
    `with ${visible}, ${addresses}
     select v.id from v left join i on i.host_id = v.id
     where i.host_id is null or i.subnet_id is null or not (i.subnet_id = any(?::uuid[]))
     union
     select s.host_id from ${services} s where s.id in (
       select jsonb_array_elements_text(d.members -> 'service_ids')::uuid from ${deps} d
       union all
       select b.service_id from ${bindings} b where b.id in (select jsonb_array_elements_text(d.members -> 'binding_ids')::uuid from ${deps} d))`,
    [...vp, ...ip, collapsedIds, ...svp, ...dp, ...bp, ...dp],
  );
  const hostIds = rows.map((r) => r.id);
  const size = await countElements(db, organizationId, q.network_id, at, hostIds);
  const snapshot = await rowsFor(db, task, size, organizationId, q.network_id, at, hostIds);
  const collapsed = new Map([...chosen].map((id) => [id, { ip_address: perSubnet.get(id)! }]));
  const options = { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: Number.MAX_SAFE_INTEGER, newHostIds: await newHostIds(db, organizationId, q.network_id, at) };
  return cpuPool().run(organizationId, task, { rows: snapshot, view: 'l3', options, forced: { collapsed, filteredOut } } as TaskInput<K>, size);
}

/** A drawing's task: the graph as objects (the layout worker), or its nodes and edges as JSON bytes (an answer). */
type DrawTask = 'draw' | 'drawJson';

const NOW_SQL = `select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`;
const INVENTORY_TABLES = ['subnets', 'hosts', 'ip_addresses', 'ports', 'services', 'bindings', 'interfaces', 'dependencies'] as const;

/** A tick of a timeline: the state at `tick`, the end of a bucket of `changes` change instants (`first_us`..`last_us`, epoch µs). */
export interface ChangeBucket { tick: string; changes: number; first_us: number; last_us: number }

/**
 * The instants in (from, to] at which anything of the network changed (every state that began or
 * ended then, in every table; one write transaction is one instant), grouped into at most
 * `buckets` buckets cut at the longest pauses between consecutive instants: a burst of changes (a
 * bulk import, a discovery batch) stays one bucket. One statement on the history tables' network
 * indexes; only the buckets leave PostgreSQL, however many instants there are.
 */
async function changeBuckets(db: Db, organizationId: string, networkId: string, from: string, to: string, buckets: number): Promise<ChangeBucket[]> {
  const parts = INVENTORY_TABLES.flatMap((t) => [
    `select valid_from as t from ${t}_history where organization_id = ? and network_id = ? and valid_from > ? and valid_from <= ?`,
    `select valid_to from ${t}_history where organization_id = ? and network_id = ? and valid_to > ? and valid_to <= ?`,
  ]);
  const us = (t: string) => `(extract(epoch from ${t}) * 1000000)::bigint::text`;
  const rows = await db.query<{ tick: string; changes: number; first_us: string; last_us: string }>(
    `with i as (select distinct t from (${parts.join(' union all ')}) x),
          g as (select t, t - lag(t) over (order by t) as pause from i),
          cut as (select t from g where pause is not null order by pause desc, t limit ?),
          b as (select g.t, count(cut.t) over (order by g.t) as bucket from g left join cut on cut.t = g.t)
     select ${US('max(t)')} as tick, count(*)::int as changes, ${us('min(t)')} as first_us, ${us('max(t)')} as last_us
     from b group by bucket order by bucket`,
    [...parts.flatMap(() => [organizationId, networkId, from, to]), Math.max(0, buckets - 1)],
  );
  return rows.map((r) => ({ tick: r.tick, changes: r.changes, first_us: Number(r.first_us), last_us: Number(r.last_us) }));
}

/**
 * Consecutive buckets merged into at most `max`, cut at the longest pauses between them (the rule
 * of changeBuckets, so merging its answer equals asking it for `max` buckets). Pure.
 */
export function mergeBuckets(buckets: ChangeBucket[], max: number): ChangeBucket[] {
  if (buckets.length <= max) return buckets;
  const pauses = buckets.slice(1).map((b, i) => ({ at: i + 1, pause: b.first_us - buckets[i]!.last_us, t: b.first_us }));
  pauses.sort((a, b) => b.pause - a.pause || a.t - b.t);
  const cuts = new Set(pauses.slice(0, Math.max(0, max - 1)).map((p) => p.at));
  const merged: ChangeBucket[] = [];
  buckets.forEach((b, i) => {
    const last = merged[merged.length - 1];
    if (last && !cuts.has(i)) Object.assign(last, { tick: b.tick, changes: last.changes + b.changes, last_us: b.last_us });
    else merged.push({ ...b });
  });
  return merged;
}

export interface TopologyQuery {
  network_id: string; view: View; at?: string; tag_ids?: string[]; include_hidden: boolean; max_nodes: number; expand?: string[];
}

/** The graph of a query at one instant, in one transaction (the worker draws it again from the same inputs). */
export function graphAt(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined) {
  return readTransaction(db, (tx) => drawQuery(tx, organizationId, q, at, 'draw'));
}

/** graphAt for an answer: nodes and edges as JSON bytes, spliced into the answer (JsonText). */
function graphJsonAt(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined) {
  return drawQuery(db, organizationId, q, at, 'drawJson');
}

async function drawQuery<K extends DrawTask>(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined, task: K): Promise<TaskOutput<K>> {
  if (q.view === 'l3' && q.max_nodes < Number.MAX_SAFE_INTEGER) {
    const budgeted = await budgetedL3(db, organizationId, q, at, task);
    if (budgeted) return budgeted;
  }
  const size = await countElements(db, organizationId, q.network_id, at);
  const rows = await rowsFor(db, task, size, organizationId, q.network_id, at);
  const options = { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: q.max_nodes, expand: q.expand, newHostIds: await newHostIds(db, organizationId, q.network_id, at) };
  return cpuPool().run(organizationId, task, { rows, view: q.view, options } as TaskInput<K>, size);
}

/**
 * The hosts the network's last completed Network scan (as of `at`) found new, as its summary lists
 * them (the first SUMMARY_HOSTS_LISTED by name): the map marks them.
 */
async function newHostIds(db: Db, organizationId: string, networkId: string, at: string | undefined): Promise<string[]> {
  const row = await db.one<{ ids: string[] | null }>(
    `select array(select jsonb_array_elements(s.summary->'new_hosts')->>'id') as ids from discovery_sessions s
     where s.organization_id = ? and s.network_id = ? and s.discovery_type->>'type' = 'Network' and s.phase = 'Complete' and s.summary is not null
       and s.finished_at <= coalesce(?::timestamptz, now())
     order by s.finished_at desc, s.id desc limit 1`, [organizationId, networkId, at ?? null]);
  return row?.ids ?? [];
}

/**
 * A topology read: every table in one transaction (one snapshot, one `now`), without parallel
 * workers. Their start-up cost more than they saved on these scans (bench network, budgeted l3 as
 * of an instant, medians of 10: 285 → 257 ms; live unchanged) and a 2-core API server has no
 * idle cores to give them under load. Random reads priced as the cached or SSD-backed reads they
 * are (1.1, not PostgreSQL's spinning-disk default of 4): the children of the hosts a budgeted
 * graph leaves open were read by sequential scans of their history tables, where index probes
 * take a fifth of the time (bindings of 2,310 services as of an instant: 36–47 → 6–11 ms; the
 * budgeted graph as of an instant, median of 12: ~250 → ~180 ms, live ~160 → ~135 ms; the diff
 * and the full graph unchanged).
 */
function readTransaction<T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(READ_SETTINGS);
    return fn(tx);
  }, { snapshot: true });
}

/** The graph of a query, in one transaction, and the instant it shows (`at`, or now). */
async function drawAt(db: Db, organizationId: string, q: TopologyQuery) {
  return readTransaction(db, async (tx) => {
    const asOf = q.at ?? (await tx.one<{ now: string }>(NOW_SQL))!.now;
    return { ...(await graphJsonAt(tx, organizationId, q, q.at)), asOf };
  });
}

export interface IntervalQuery {
  network_id: string; view: View; from: string; to?: string;
  /** The diff's window by changes instead of `from` (schemas.ts diffQuery: one of the two). */
  last_changes?: number; tag_ids?: string[]; include_hidden: boolean;
  /** The diff's bound: most nodes and most edges listed. */
  max_changes?: number;
  /** The timeline's shaping (as the view's): its union's biggest containers collapsed. The diff compares everything. */
  max_nodes?: number; expand?: string[];
}

/**
 * The union of a view over [from, to]: every node and edge with its intervals, and the ticks: `from`,
 * then one per bucket of change instants (the state at the bucket's end), each with its count of
 * changes (`tick_changes`, 0 for `from`). Every instant is its own tick while they fit the budget;
 * past it they are grouped, into fewer buckets when the view is large (ticks × element rows ≤
 * TIMELINE_MAX_DRAWN), so a long or busy history is drawn coarser instead of refused.
 */
export function timelineGraph(db: Db, organizationId: string, q: IntervalQuery & { to: string }) {
  return readTransaction(db, (tx) => timelineOf(tx, organizationId, q, 'timeline'));
}

/** timelineGraph for an answer: nodes and edges as JSON bytes, spliced into the answer (JsonText). */
function timelineJson(db: Db, organizationId: string, q: IntervalQuery & { to: string }) {
  return timelineOf(db, organizationId, q, 'timelineJson');
}

async function timelineOf<K extends 'timeline' | 'timelineJson'>(db: Db, organizationId: string, q: IntervalQuery & { to: string }, task: K) {
  const buckets = await changeBuckets(db, organizationId, q.network_id, q.from, q.to, MAX_TICKS - 1);
  // Every instant drawn from one read of each history table (`from` in the ticks' own format).
  const from = (await db.one<{ t: string }>(`select ${US('?::timestamptz')} as t`, [q.from]))!.t;
  const spanned = span([from, buckets.at(-1)?.tick ?? from]);
  const elements = await countElements(db, organizationId, q.network_id, spanned);
  // The rows valid anywhere in the span bound each tick's drawing, so this many ticks stay within the bound.
  const fit = Math.min(MAX_TICKS, Math.floor(TIMELINE_MAX_DRAWN / Math.max(1, elements)));
  if (fit < 2 && buckets.length) {
    throw new AppError('validation_failed', {
      field: 'from',
      reason: `this view holds ${elements} elements in this interval: two instants of it would draw more than ${TIMELINE_MAX_DRAWN}; filter by tag_ids or read another view`,
    });
  }
  const grouped = mergeBuckets(buckets, fit - 1);
  const ticks = [q.from, ...grouped.map((b) => b.tick)];
  const tickRows = [from, ...ticks.slice(1)];
  const all = await rowsFor(db, task, elements * ticks.length, organizationId, q.network_id, spanned);
  const union = await cpuPool().run(organizationId, task, {
    // expand also opens l3's summaries (graph.ts quietFolds), which the drawing itself decides.
    all, instants: tickRows, ticks, view: q.view, options: { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: Number.MAX_SAFE_INTEGER, expand: q.expand },
    maxNodes: q.max_nodes ?? Number.MAX_SAFE_INTEGER, expand: q.expand, maxDrawn: TIMELINE_MAX_DRAWN,
  } as TaskInput<K>, elements * ticks.length) as TaskOutput<'timeline'> | TaskOutput<'timelineJson'> as TaskOutput<K>;
  if ('refused' in union) {
    // Not reached while `fit` bounds the ticks (kept as the thread's own guard).
    throw new AppError('validation_failed', {
      field: 'from',
      reason: `this timeline would draw ${union.refused} elements (${ticks.length} instants × the elements at each), more than ${TIMELINE_MAX_DRAWN}: choose a shorter interval, filter by tag_ids or read another view`,
    });
  }
  return { ticks, tick_changes: [0, ...grouped.map((b) => b.changes)], ...(union as Exclude<TaskOutput<K>, { refused: number }>) };
}

/** `alias`'s row has a state boundary (it began or ended) in (from, to]: parameters from, to, from, to. */
const boundaryIn = (alias: string) => `(${alias}.valid_from > ? and ${alias}.valid_from <= ? or ${alias}.valid_to > ? and ${alias}.valid_to <= ?)`;
/** The same for a row of the network: parameters organization, network, from, to, from, to. */
const changedIn = (alias: string) => `${alias}.organization_id = ? and ${alias}.network_id = ? and ${boundaryIn(alias)}`;
/** `alias`'s row was valid at `from` or at `to`: parameters from, to. */
const validAtEither = (alias: string) => `(tstzrange(${alias}.valid_from, ${alias}.valid_to) @> ?::timestamptz or tstzrange(${alias}.valid_from, ${alias}.valid_to) @> ?::timestamptz)`;

/**
 * The hosts whose drawing can differ between `from` and `to`, asked of the history tables (issue
 * 11.2: a diff from history, not two whole drawings): every host with a state that began or ended
 * in (from, to], its own or a child's (addresses, ports, services, bindings, interfaces), then the
 * hosts an edge joins to those (members of the same dependency, or of a changed dependency; a VM
 * or container and the service it runs under). A host outside this set is drawn alike at both
 * instants, and so are its edges; subnets and dependencies are drawn whole (an address changes
 * subnet only by a state of its own). Undefined: compare everything: when more than half of the
 * hosts changed themselves (drawing all costs less than finding and filtering by them), in l2
 * (links are resolved by names), in application after one of its tags changed.
 */
async function hostsToCompare(db: Db, organizationId: string, q: IntervalQuery, from: string, to: string): Promise<string[] | undefined> {
  if (q.view === 'l2') return undefined;
  // Every statement names the organization as well as the network (and joins within it): it reads the organization's partition only.
  const window = [organizationId, q.network_id, from, to, from, to];
  if (q.view === 'application') {
    const tags = await db.one(`select 1 from tags_history t where t.organization_id = ? and ${boundaryIn('t')} limit 1`, [organizationId, from, to, from, to]);
    if (tags) return undefined;
  }
  const hosts = await db.query<{ host_id: string; own: boolean }>(
    `select h.id as host_id, true as own from hosts_history h where ${changedIn('h')}
     union select x.host_id, false from ip_addresses_history x where ${changedIn('x')}
     union select x.host_id, false from ports_history x where ${changedIn('x')}
     union select x.host_id, false from services_history x where ${changedIn('x')}
     union select x.host_id, false from interfaces_history x where ${changedIn('x')}
     union select s.host_id, false from bindings_history b join services_history s on s.organization_id = ? and s.id = b.service_id where ${changedIn('b')}`,
    [...window, ...window, ...window, ...window, ...window, organizationId, ...window],
  );
  // When most hosts changed themselves, drawing everything costs less than finding and filtering by
  // them. The hosts' states valid at either instant are counted only up to twice the changed hosts:
  // past that the answer is known, and a count of all of them would cost what the network holds.
  const changed = new Set(hosts.filter((r) => r.own).map((r) => r.host_id)).size;
  if (changed) {
    const states = await db.one<{ n: number }>(
      `select count(*)::int as n from (select 1 from hosts_history h where h.organization_id = ? and h.network_id = ? and ${validAtEither('h')} limit ?) c`,
      [organizationId, q.network_id, from, to, changed * 2 + 1],
    );
    if (changed * 2 > states!.n) return undefined;
  }
  const compare = new Set(hosts.map((r) => r.host_id));
  // Edges between hosts: dependencies (members by service or by binding) and virtualization, at either instant.
  const deps = await db.query<{ id: string; members: any; changed: boolean }>(
    `select d.id, d.members, (d.valid_from > ? and d.valid_from <= ? or d.valid_to > ? and d.valid_to <= ?) as changed
     from dependencies_history d where d.organization_id = ? and d.network_id = ? and ${validAtEither('d')}`,
    [from, to, from, to, organizationId, q.network_id, from, to],
  );
  // As uuids, so that the members are found by their ids' indexes (a cast of every id to text scanned every service's history).
  const memberIds = deps.flatMap((d) => [...(d.members?.service_ids ?? []), ...(d.members?.binding_ids ?? [])]).filter((x) => typeof x === 'string' && UUID.test(x));
  const links = await db.query<{ a: string; b: string | null; dependency_id: string | null }>(
    `with m as (
       select s.id::text as member, s.host_id from services_history s
         where s.organization_id = ? and s.network_id = ? and s.id = any(?::uuid[]) and ${validAtEither('s')}
       union select b.id::text, s.host_id from bindings_history b join services_history s on s.organization_id = ? and s.id = b.service_id and ${validAtEither('s')}
         where b.organization_id = ? and b.network_id = ? and b.id = any(?::uuid[]) and ${validAtEither('b')}),
     v as (
       select h.id as host_id, h.virtualization #>> '{details,service_id}' as runs_under from hosts_history h
         where h.organization_id = ? and h.network_id = ? and h.virtualization #>> '{details,service_id}' is not null and ${validAtEither('h')}
       union select s.host_id, s.virtualization #>> '{details,service_id}' from services_history s
         where s.organization_id = ? and s.network_id = ? and s.virtualization #>> '{details,service_id}' is not null and ${validAtEither('s')})
     select m.member as a, m.host_id::text as b, null as dependency_id from m
     union all
     select v.host_id::text, r.host_id::text, 'virtualization' from v
       cross join lateral (select r.host_id from services_history r where r.organization_id = ? and r.network_id = ? and ${validAtEither('r')}
         and r.id = case when v.runs_under ~* '${UUID.source}' then v.runs_under::uuid end) r`,
    [organizationId, q.network_id, memberIds, from, to,
      organizationId, from, to, organizationId, q.network_id, memberIds, from, to,
      organizationId, q.network_id, from, to,
      organizationId, q.network_id, from, to,
      organizationId, q.network_id, from, to],
  );
  const hostsOfMember = new Map<string, Set<string>>();
  for (const l of links) {
    if (l.dependency_id === 'virtualization') {
      if (compare.has(l.a) || compare.has(l.b!)) [l.a, l.b!].forEach((h) => compare.add(h));
    } else {
      (hostsOfMember.get(l.a) ?? hostsOfMember.set(l.a, new Set()).get(l.a)!).add(l.b!);
    }
  }
  // Virtualization pairs were added above; a dependency brings all its member hosts when it changed or touches a compared host.
  const touched = new Set(compare);
  for (const d of deps) {
    const members = [...(d.members?.service_ids ?? []), ...(d.members?.binding_ids ?? [])].flatMap((m: string) => [...(hostsOfMember.get(m) ?? [])]);
    if (d.changed || members.some((h) => touched.has(h))) members.forEach((h) => compare.add(h));
  }
  if (FOLDS_QUIET_HOSTS.has(q.view)) for (const h of await quietNeighbours(db, organizationId, q.network_id, from, to, [...compare])) compare.add(h);
  return [...compare];
}

/** The views that fold a subnet's quiet hosts into one summary node (graph.ts quietFolds). */
const FOLDS_QUIET_HOSTS = new Set(['l3', 'workloads']);

/**
 * l3 and workloads fold a subnet's quiet hosts (one address, no service) into one summary node
 * (graph.ts quietFolds) that lists them all, so a compared host quiet in a subnet at either instant
 * (or a subnet that changed) brings that subnet's other quiet hosts: drawn without them the summary
 * would not be the whole view's (workloads leaves out of its folds a host run under a drawn service;
 * comparing it as well costs a little and changes nothing). Read by subnet and host indexes: it
 * costs what those subnets hold.
 */
async function quietNeighbours(db: Db, organizationId: string, networkId: string, from: string, to: string, hostIds: string[]): Promise<string[]> {
  const at = (alias: string) => `tstzrange(${alias}.valid_from, ${alias}.valid_to) @> w.at`;
  const quiet = (alias: string) => `not exists (select 1 from ip_addresses_history b where b.organization_id = ? and b.host_id = ${alias}.host_id and b.id <> ${alias}.id and ${at('b')})
       and not exists (select 1 from services_history s where s.organization_id = ? and s.host_id = ${alias}.host_id and ${at('s')})`;
  const rows = await db.query<{ host_id: string }>(
    `with w(at) as (values (?::timestamptz), (?::timestamptz)),
     folds as (
       select a.subnet_id from w join ip_addresses_history a on a.organization_id = ? and a.host_id = any(?::uuid[]) and ${at('a')}
         where a.subnet_id is not null and ${quiet('a')}
       union select y.id from subnets_history y where ${changedIn('y')})
     select distinct a.host_id from w join ip_addresses_history a
       on a.organization_id = ? and a.network_id = ? and a.subnet_id in (select subnet_id from folds) and ${at('a')}
     where ${quiet('a')}`,
    [from, to, organizationId, hostIds, organizationId, organizationId, organizationId, networkId, from, to, from, to,
      organizationId, networkId, organizationId, organizationId],
  );
  return rows.map((r) => r.host_id);
}

/**
 * The instant just before the network's last `n` change instants up to `to` (1 µs before the
 * earliest of them: the state then holds every earlier change), or just before `to` when nothing
 * changed: a diff's default window, sized by changes rather than by time.
 */
async function beforeLastChanges(db: Db, organizationId: string, networkId: string, to: string, n: number): Promise<string> {
  const parts = INVENTORY_TABLES.flatMap((t) => [
    `(select valid_from as t from ${t}_history where organization_id = ? and network_id = ? and valid_from <= ? order by valid_from desc limit ${n})`,
    `(select valid_to from ${t}_history where organization_id = ? and network_id = ? and valid_to <= ? order by valid_to desc limit ${n})`,
  ]);
  const row = await db.one<{ from: string }>(
    `select ${US(`(coalesce(min(t), ?::timestamptz) - interval '1 microsecond')`)} as from
     from (select distinct t from (${parts.join(' union all ')}) x order by t desc limit ${n}) y`,
    [to, ...parts.flatMap(() => [organizationId, networkId, to])],
  );
  return row!.from;
}

/** A diff's two drawings: the whole view, or only the hosts compared (subnets and dependencies always whole). */
async function drawForDiff(db: Db, organizationId: string, q: IntervalQuery, instants: Instants, hostIds: string[] | undefined) {
  const size = await countElements(db, organizationId, q.network_id, instants, hostIds);
  const both = await rowsFor(db, 'diff', size, organizationId, q.network_id, instants, hostIds);
  const diff = await cpuPool().run(organizationId, 'diff', {
    both, view: q.view, options: { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: Number.MAX_SAFE_INTEGER }, maxChanges: q.max_changes ?? MAX_DIFF_CHANGES,
  }, size);
  return { nodes: new JsonText(diff.nodes), edges: new JsonText(diff.edges), truncated: diff.truncated };
}

/**
 * A diff's parts, each in its own read: the hosts it compares between `q.from` and `to`, and its
 * answer over given hosts (undefined: every host), for the spec that checks the two agree.
 */
export const diffParts = {
  hostsToCompare: (db: Db, organizationId: string, q: IntervalQuery, to: string) => readTransaction(db, (tx) => hostsToCompare(tx, organizationId, q, q.from, to)),
  draw: (db: Db, organizationId: string, q: IntervalQuery, to: string, hostIds: string[] | undefined) =>
    readTransaction(db, (tx) => drawForDiff(tx, organizationId, q, [q.from, to], hostIds)),
};

/** A view as a file (topologyService.export runs it in the organization's turn). */
async function exportView(db: Db, organizationId: string, q: TopologyQuery & { format: ExportFormat }) {
  const { graph, digest, asOf } = await drawAt(db, organizationId, q);
  const stored = POSITIONED[q.format]
    ? await db.one<{ positions: string }>(`select positions::text as positions from topology_layouts where view = ? and digest = ? and status = 'ready'`, [q.view, digest])
    : undefined;
  const pins = await readPins(db, organizationId, q.network_id, q.view);
  const network = await db.one<{ name: string }>(`select name from networks_history where organization_id = ? and id = ? order by valid_from desc limit 1`, [organizationId, q.network_id]);
  const title = `${network?.name ?? 'network'} — ${q.view} — ${asOf}`;
  // Laid out (when no layout is stored) and written on a thread; a layout made here is kept for every later answer.
  const { text, made } = await cpuPool().run(organizationId, 'export', { format: q.format, graph, stored: stored?.positions, pins, title }, graph.nodeIds.length);
  if (made) await storeLayout(db, { view: q.view, digest, network_id: q.network_id }, made);
  const { type, extension } = EXPORT_FORMATS[q.format];
  // Bytes from a thread arrive as a Uint8Array: a Buffer over the same memory, not a copy.
  return new FileResponse(type, exportFileName(network?.name ?? 'network', q.view, asOf, extension), Buffer.from(text.buffer, text.byteOffset, text.byteLength));
}

/** Draws of `get` in progress in this process, by organization, cache key and change version. */
const drawsInProgress = new Map<string, Promise<Drawn>>();

export const topologyService = {
  async diff(db: Db, scope: Scope, query: Omit<IntervalQuery, 'from'> & { from?: string }, budget?: HeavyReadBudget) {
    await networkService.assertFilterable(db, scope, query.network_id, query.to); // the network as of the interval's end
    return cpuPool().heavy(scope.organizationId, () => readTransaction(db, async (tx) => {
      const to = query.to ?? (await tx.one<{ now: string }>(NOW_SQL))!.now;
      const from = query.from ?? (await beforeLastChanges(tx, scope.organizationId, query.network_id, to, query.last_changes!));
      const q = { ...query, from };
      const hostIds = await hostsToCompare(tx, scope.organizationId, q, from, to);
      return { network_id: q.network_id, view: q.view, from, to, ...(await drawForDiff(tx, scope.organizationId, q, [from, to], hostIds)) };
    }), budget);
  },

  async timeline(db: Db, scope: Scope, q: IntervalQuery, layoutQueue: Queue, budget?: HeavyReadBudget) {
    await networkService.assertFilterable(db, scope, q.network_id, q.to);
    const union = await cpuPool().heavy(scope.organizationId, () => readTransaction(db, async (tx) => {
      const to = q.to ?? (await tx.one<{ now: string }>(NOW_SQL))!.now;
      return { to, ...(await timelineJson(tx, scope.organizationId, { ...q, to })) };
    }), budget);
    // ONE layout for the union: scrubbing through the interval never moves a node.
    const layout = await layoutFor(db, layoutQueue, {
      organization_id: scope.organizationId, network_id: q.network_id, view: q.view, as_of: union.to, digest: union.digest,
      tag_ids: q.tag_ids, include_hidden: q.include_hidden, max_nodes: q.max_nodes ?? Number.MAX_SAFE_INTEGER, expand: q.expand, timeline: { from: q.from, to: union.to },
    }, new Set(union.nodeIds));
    return {
      network_id: q.network_id, view: q.view, from: q.from, to: union.to, ticks: union.ticks, tick_changes: union.tick_changes, digest: union.digest,
      nodes: new JsonText(union.nodes), edges: new JsonText(union.edges), layout, filtered_out: union.filtered_out,
    };
  },

  /** A file of the view as drawn at `at` (now by default), laid out (now, in this request, if no layout is stored yet). */
  async export(db: Db, scope: Scope, q: TopologyQuery & { format: ExportFormat }, budget?: HeavyReadBudget) {
    await networkService.assertFilterable(db, scope, q.network_id, q.at);
    return cpuPool().heavy(scope.organizationId, () => exportView(db, scope.organizationId, q), budget);
  },

  async get(db: Db, scope: Scope, q: TopologyQuery, layoutQueue: Queue, cache?: DrawnGraphCache, budget?: HeavyReadBudget) {
    await networkService.assertFilterable(db, scope, q.network_id, q.at);
    // The version first, then the drawing (graphCache.ts says why this order is safe).
    const { version, now } = await changeVersion(db, scope.organizationId, q.network_id);
    // The last completed scan too: it says which hosts are new (newHostIds), and a scan that changed nothing writes no event.
    const lastScan = q.at ? null : (await db.one<{ id: string }>(
      `select id from discovery_sessions where organization_id = ? and network_id = ? and discovery_type->>'type' = 'Network' and summary is not null
         and phase = 'Complete' and finished_at is not null order by finished_at desc, id desc limit 1`, [scope.organizationId, q.network_id]))?.id ?? null;
    const key = JSON.stringify([q.network_id, q.view, q.at ?? null, [...(q.tag_ids ?? [])].sort(), q.include_hidden, q.max_nodes, [...(q.expand ?? [])].sort(), lastScan]);
    let drawn = cache?.get(key, version);
    if (!drawn) {
      // Requests for the same drawing of the same version (a map polled, opened by several operators)
      // share one draw in progress: one heavy read, not one each (which would also fill the
      // organization's queue and refuse the rest with topology_busy).
      const flightKey = version === undefined ? undefined : `${scope.organizationId} ${key} ${version}`;
      let drawing = flightKey === undefined ? undefined : drawsInProgress.get(flightKey);
      if (!drawing) {
        // One snapshot: every table read in one transaction, and `as_of` is its instant.
        drawing = cpuPool().heavy(scope.organizationId, async () => {
          const { graph, digest, asOf } = await drawAt(db, scope.organizationId, q);
          return { graph, digest, asOf, availableViews: await availableViewsOf(db, scope.organizationId, q.network_id, q.at) };
        }, budget);
        if (flightKey !== undefined) {
          drawsInProgress.set(flightKey, drawing);
          drawing.finally(() => drawsInProgress.delete(flightKey)).catch(() => undefined);
        }
      }
      drawn = await drawing;
      cache?.set(key, version, drawn, drawn.graph.size);
    } else {
      // Unchanged since it was drawn: the same graph is the network as of now.
      drawn = { ...drawn, asOf: q.at ?? now };
    }
    const { graph, digest, availableViews, asOf } = drawn;
    const layout = await layoutFor(db, layoutQueue, {
      organization_id: scope.organizationId, network_id: q.network_id, view: q.view, as_of: asOf, digest,
      tag_ids: q.tag_ids, include_hidden: q.include_hidden, max_nodes: q.max_nodes, expand: q.expand,
    }, new Set(graph.nodeIds));
    return {
      network_id: q.network_id,
      view: q.view,
      as_of: asOf,
      digest,
      available_views: availableViews,
      nodes: new JsonText(graph.nodes),
      edges: new JsonText(graph.edges),
      layout,
      filtered_out: graph.filtered_out,
    };
  },
};

/** A drawn graph of `get` (as the answer's JSON bytes), with what else an unchanged network answers the same (its views). */
type Drawn = { graph: GraphJson & { filtered_out: FilteredOut }; digest: string; asOf: string; availableViews: View[] };
export type DrawnGraphCache = GraphCache<Drawn>;

/** Pins: positions fixed by hand, laid over every layout of the network's view. */
/**
 * What a pin may name (any node id was stored, and 100,000 pins made an empty map's GET
 * 8× slower): a node of the view, that is a kind the view draws whose entity is in the network
 * (tags: in the organization), and at most MAX_PINS per network view.
 */
const PIN_KINDS: Record<View, Record<string, string>> = {
  l3: { subnet: 'subnets', summary: 'subnets', ip_address: 'ip_addresses', host: 'hosts', ghost: 'services' },
  workloads: { host: 'hosts', summary: 'subnets', service: 'services', ghost: 'services' },
  application: { tag: 'tags', service: 'services', ghost: 'services' },
  l2: { host: 'hosts', interface: 'interfaces' },
};
export const MAX_PINS = MAX_NODES_CAP;

async function checkPins(db: Db, organizationId: string, networkId: string, view: View, nodeIds: string[]): Promise<void> {
  const refuse = (id: string, reason: string) => { throw new AppError('validation_failed', { field: `positions.${id}`, reason }); };
  const byKind = new Map<string, string[]>();
  for (const id of nodeIds) {
    const [kind, entity] = id.split(':') as [string, string];
    if (!PIN_KINDS[view][kind]) refuse(id, `the ${view} view draws no node of kind '${kind}'`);
    (byKind.get(kind) ?? byKind.set(kind, []).get(kind)!).push(entity);
  }
  for (const [kind, ids] of byKind) {
    const table = PIN_KINDS[view][kind]!;
    const [owner, ownerParams] = table === 'tags' ? ['organization_id = ?', [organizationId]] : ['organization_id = ? and network_id = ?', [organizationId, networkId]];
    // An l2 port may be drawn from an address (a host placed only by a forwarding table: graph.ts).
    const from = view === 'l2' && kind === 'interface'
      ? `(select id, organization_id, network_id from interfaces union all select id, organization_id, network_id from ip_addresses) t` : table;
    const found = new Set((await db.query<{ id: string }>(`select id::text from ${from} where ${owner} and id = any(?::uuid[])`, [...ownerParams, ids])).map((r) => r.id));
    const missing = ids.find((id) => !found.has(id));
    if (missing) refuse(`${kind}:${missing}`, `no ${kind.replace('_', ' ')} of this network has this id`);
  }
  const others = await db.one<{ n: number }>(`select count(*)::int as n from topology_pins where organization_id = ? and network_id = ? and view = ? and node_id <> all(?::text[])`, [organizationId, networkId, view, nodeIds]);
  if (others!.n + nodeIds.length > MAX_PINS) {
    throw new AppError('validation_failed', { field: 'positions', reason: `at most ${MAX_PINS} nodes of a view may be pinned (${others!.n} are): unpin some first` });
  }
}

export const pinService = {
  async pin(db: Db, scope: Scope, input: { network_id: string; view: View; positions: Record<string, { x: number; y: number }> }) {
    await networkService.assertWritable(db, scope, input.network_id);
    await checkPins(db, scope.organizationId, input.network_id, input.view, Object.keys(input.positions));
    const rows = Object.entries(input.positions).map(([node_id, p]) => ({ node_id, x: p.x, y: p.y }));
    await db.query(
      `insert into topology_pins (organization_id, network_id, view, node_id, x, y)
       select ?, ?, ?, r.node_id, r.x, r.y from jsonb_to_recordset(?::jsonb) as r(node_id text, x double precision, y double precision)
       on conflict (network_id, view, node_id, organization_id) do update set x = excluded.x, y = excluded.y, updated_at = now()`,
      [scope.organizationId, input.network_id, input.view, JSON.stringify(rows)],
    );
    return this.list(db, scope, input.network_id, input.view);
  },

  async unpin(db: Db, scope: Scope, q: { network_id: string; view: View; node_ids?: string[] }) {
    await networkService.assertFilterable(db, scope, q.network_id); // a query parameter: 404 / 403 as for lists
    if (q.node_ids?.length) {
      await db.query(`delete from topology_pins where organization_id = ? and network_id = ? and view = ? and node_id = any(?::text[])`, [scope.organizationId, q.network_id, q.view, q.node_ids]);
    } else {
      await db.query(`delete from topology_pins where organization_id = ? and network_id = ? and view = ?`, [scope.organizationId, q.network_id, q.view]);
    }
    return this.list(db, scope, q.network_id, q.view);
  },

  async list(db: Db, scope: Scope, networkId: string, view: View) {
    const rows = await db.query<{ node_id: string }>(`select node_id from topology_pins where organization_id = ? and network_id = ? and view = ? order by node_id`, [scope.organizationId, networkId, view]);
    return { network_id: networkId, view, pinned: rows.map((r) => r.node_id) };
  },
};
