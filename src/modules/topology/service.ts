// The topology of one network at one instant: the inventory read once (live tables, or the
// history tables as of `at`: one statement per table), then drawn by the pure graph.ts.
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import type { Queue } from 'bullmq';
import { chooseCollapsed, emptyFilteredOut, MAX_NODES_CAP, type FilteredOut, type Snapshot, type View } from './graph.js';
import { ELEMENT_TABLES, HOST_TABLES, NETWORK_TABLES, nodeSources, readColumns, SNAPSHOT_TABLES, TABLES, VIEW_DECLARATIONS, VIEWS, type SnapshotTable } from './declaration.js';
import { layoutFor, readPins, storeLayout, type Box } from './layout.js';
import { changeVersion, drawingKey, GraphCache } from './graphCache.js';
import { EXPORT_FORMATS, type ExportFormat } from './export.js';
import { exportFileName } from './names.js';
import { cpuPool } from './pool.js';
import { POSITIONED, type GraphJson, type SnapshotRows, type SnapshotText, type TaskInput, type TaskName, type TaskOutput } from './thread.js';
import { asJsonTexts, fromJsonTexts, READ_SETTINGS, type SnapshotRead } from './threadReads.js';
import { AppError } from '../../core/errors.js';
import { UUID } from '../../core/principal.js';
import { MAX_DIFF_CHANGES, MAX_TICKS, TIMELINE_MAX_DRAWN } from './bounds.js';
import { FileResponse } from '../../http/envelope.js';
import { JsonText } from '../../http/jsonText.js';
import type { HeavyReadBudget } from './heavyReadBudget.js';

/** A table's columns as read (declaration.ts): host(ip_address) prints an address without its /32 (the column is inet). */
const columnsOf = (table: SnapshotTable) => readColumns(table).map((c) => (table === 'ipAddresses' && c === 'ip_address' ? 'host(ip_address) as ip_address' : c)).join(', ');

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

/**
 * A table's read as a statement and its parameters. `hostIds`: only these hosts and their children
 * (the budgeted read, a diff's compared hosts; declaration.ts hostLink); undefined: the whole network.
 */
function rowsOf(table: SnapshotTable, organizationId: string, networkId: string, at: When, hostIds?: string[]): [string, unknown[]] {
  const { sql, hostLink, owner } = TABLES[table];
  const cols = `${columnsOf(table)}${validityColumns(at)}`;
  const [src, params] = sourceOf(sql, organizationId, owner === 'network' ? networkId : undefined, at);
  if (!hostIds || !hostLink) return [`select ${cols} from ${src} t`, params];
  // The hosts as a set to join (not `= any(array)`, a filter): the planner then reads by their
  // indexes, host by host, instead of scanning every row of the network and filtering.
  const hosts = '(select unnest(?::uuid[]))';
  if (hostLink === 'self') return [`select ${cols} from ${src} t where id in ${hosts}`, [...params, hostIds]];
  if (hostLink === 'service') {
    const [services, sp] = sourceOf(TABLES.services.sql, organizationId, networkId, at);
    return [`select ${cols} from ${src} t where service_id in (select id from ${services} s where host_id in ${hosts})`, [...params, ...sp, hostIds]];
  }
  return [`select ${cols} from ${src} t where host_id in ${hosts}`, [...params, hostIds]];
}

const tagsOf = (organizationId: string, at: When) => sourceOf(TABLES.tags.sql, organizationId, undefined, at);

/** Every table's read of a snapshot, by the Snapshot's names. */
function snapshotReads(organizationId: string, networkId: string, at: When, hostIds?: string[]): Record<SnapshotTable, [string, unknown[]]> {
  return Object.fromEntries(SNAPSHOT_TABLES.map((t) => [t, rowsOf(t, organizationId, networkId, at, hostIds)])) as Record<SnapshotTable, [string, unknown[]]>;
}

/**
 * The hosts with a state that began or ended in a window, their own (`own`) or a child's
 * (declaration.ts hostLink), from the history tables. `window`: organization, network, from, to, from, to.
 */
function changedHosts(organizationId: string, window: unknown[]): [string, unknown[]] {
  const parts = HOST_TABLES.map((table): [string, unknown[]] => {
    const { sql, hostLink } = TABLES[table];
    if (hostLink === 'self') return [`select x.id as host_id, true as own from ${sql}_history x where ${changedIn('x')}`, window];
    if (hostLink === 'host_id') return [`select x.host_id, false from ${sql}_history x where ${changedIn('x')}`, window];
    return [`select s.host_id, false from ${sql}_history x join ${TABLES.services.sql}_history s on s.organization_id = ? and s.id = x.service_id where ${changedIn('x')}`, [organizationId, ...window]];
  });
  return [parts.map(([sql]) => sql).join('\n     union '), parts.flatMap(([, params]) => params)];
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
  return { url: String(db.em.config.get('clientUrl')), snapshot: id, reads, organizationId: db.heldTo } as SnapshotRead;
}

/** The network's inventory as of `at` (now when absent). Tenancy: the caller checked the network. */
export async function loadSnapshot(db: Db, organizationId: string, networkId: string, at?: string, hostIds?: string[]): Promise<Snapshot> {
  return readSnapshot(db, organizationId, networkId, at, hostIds);
}

/** The rows valid anywhere between the first and the last of `ticks`, each with its validity (v_from, v_to). */
const span = (ticks: string[]): Span => ({ first: ticks[0]!, last: ticks[ticks.length - 1]! });

/**
 * The views with something to draw, asked of SQL (the budgeted read does not hold the whole
 * network): each view's `drawsWhen` (declaration.ts) on its table's rows; l3 always.
 */
async function availableViewsOf(db: Db, organizationId: string, networkId: string, at: string | undefined): Promise<View[]> {
  const [services, sp] = sourceOf(TABLES.services.sql, organizationId, networkId, at);
  const asked = VIEWS.flatMap((view) => {
    const when = VIEW_DECLARATIONS[view].drawsWhen;
    if (!when) return [];
    const [src, params] = sourceOf(TABLES[when.table].sql, organizationId, TABLES[when.table].owner === 'network' ? networkId : undefined, at);
    const where = when.where.split('$services');
    return [{ view, sql: `exists (select 1 from ${src} t where ${where.join(`${services}`)}) as ${view}`, params: [...params, ...where.slice(1).flatMap(() => sp)] }];
  });
  const row = await db.one<Record<string, boolean>>(`select ${asked.map((a) => a.sql).join(', ')}`, asked.flatMap((a) => a.params));
  return VIEWS.filter((v) => !VIEW_DECLARATIONS[v].drawsWhen || row![v]);
}

/**
 * The l3 view within its budget without drawing what it would collapse (the budgeted
 * graph of 10,000 hosts read and drew every host): elements per subnet counted in SQL, the
 * collapsed subnets chosen by the same rule as the drawing's (chooseCollapsed), then only the
 * hosts with an element left open, or serving a dependency, read and drawn. Undefined when the
 * whole view fits (the plain read is then as cheap).
 */
async function budgetedL3<K extends DrawTask>(db: Db, organizationId: string, q: TopologyQuery, at: string | undefined, task: K): Promise<TaskOutput<K> | undefined> {
  const tags = q.tag_ids?.length ? q.tag_ids : null;
  // The live map without a tag filter reads the kept counts (subnet_counts); as of an instant or by
  // tags the network is scanned.
  const l3 = !at && !tags ? await keptL3Counts(db, organizationId, q.network_id, q.include_hidden) : await scannedL3Counts(db, organizationId, q, at);
  const total = l3.counts.reduce((sum, r) => sum + r.n, 0);
  if (total <= q.max_nodes) return undefined;
  const filteredOut = emptyFilteredOut();
  const filters = await l3.filteredOut();
  filteredOut.hidden_hosts = filters.hidden;
  filteredOut.hosts_without_tag = filters.untagged;
  const perSubnet = new Map(l3.counts.filter((r) => r.subnet_id).map((r) => [`subnet:${r.subnet_id}`, r.n]));
  // The subnets collapsed at least: the drawing adds the elements SQL does not count (ghosts) and
  // may collapse more (buildGraph), whose hosts are then read for nothing, never missing.
  const chosen = chooseCollapsed(perSubnet, total, { maxNodes: q.max_nodes, expand: q.expand }, emptyFilteredOut());
  const collapsedIds = [...chosen].map((id) => id.slice('subnet:'.length));
  const hostIds = await l3.hostsDrawn(collapsedIds);
  const size = await countElements(db, organizationId, q.network_id, at, hostIds);
  const snapshot = await rowsFor(db, task, size, organizationId, q.network_id, at, hostIds);
  const options = { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: q.max_nodes, expand: q.expand, newHostIds: await newHostIds(db, organizationId, q.network_id, at) };
  return cpuPool().run(organizationId, task, { rows: snapshot, view: 'l3', options, forced: { counts: perSubnet, elements: total, filteredOut } } as TaskInput<K>, size);
}

/**
 * What the budgeted l3 map is chosen from: the elements per subnet of the visible hosts (null: the
 * addresses in no subnet of the network, and the hosts with no address), the hosts the filters leave
 * out, and the hosts still drawn once some subnets collapse.
 */
export interface L3Counts {
  counts: Array<{ subnet_id: string | null; n: number }>;
  filteredOut(): Promise<{ hidden: number; untagged: number }>;
  hostsDrawn(collapsedIds: string[]): Promise<string[]>;
}

/** Every host of a dependency's member service (its edges end at a collapsed subnet or at one of its nodes). */
function dependencyHosts(organizationId: string, networkId: string, at: string | undefined): [string, unknown[]] {
  const [services, svp] = sourceOf('services', organizationId, networkId, at);
  const [bindings, bp] = sourceOf('bindings', organizationId, networkId, at);
  const [deps, dp] = sourceOf('dependencies', organizationId, networkId, at);
  return [
    `select s.host_id from ${services} s where s.id in (
       select jsonb_array_elements_text(d.members -> 'service_ids')::uuid from ${deps} d
       union all
       select b.service_id from ${bindings} b where b.id in (select jsonb_array_elements_text(d.members -> 'binding_ids')::uuid from ${deps} d))`,
    [...svp, ...dp, ...bp, ...dp],
  ];
}

/** The counts scanned from every host and address of the network (as of `at`, or by tags). */
export async function scannedL3Counts(db: Db, organizationId: string, q: Pick<TopologyQuery, 'network_id' | 'tag_ids' | 'include_hidden'>, at: string | undefined): Promise<L3Counts> {
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
  const filteredOut = async () => (await db.one<{ hidden: number; untagged: number }>(
    `select count(*) filter (where hidden and not ?)::int as hidden,
            count(*) filter (where (? or not hidden) and ?::uuid[] is not null and not (tags && ?::uuid[]))::int as untagged
     from ${hosts} h`,
    [q.include_hidden, q.include_hidden, tags, tags, ...hp],
  ))!;
  // The hosts still drawn: an address outside the collapsed subnets, or none; and the dependencies'.
  // One outer join, not `not exists (…) or exists (…)`: PostgreSQL cannot turn a NOT EXISTS under
  // an OR into an anti-join, and ran it as a scan of the addresses per host (397 s at 100,000 hosts,
  // bench/README.md, growth curve; 436 ms as a join on that database).
  const hostsDrawn = async (collapsedIds: string[]) => {
    const [dependencies, dp] = dependencyHosts(organizationId, q.network_id, at);
    const rows = await db.query<{ id: string }>(
      `with ${visible}, ${addresses}
       select v.id from v left join i on i.host_id = v.id
       where i.host_id is null or i.subnet_id is null or not (i.subnet_id = any(?::uuid[]))
       union
       ${dependencies}`,
      [...vp, ...ip, collapsedIds, ...dp],
    );
    return rows.map((r) => r.id);
  };
  return { counts, filteredOut, hostsDrawn };
}

/** Networks whose kept counts have gathered enough deltas to be summed into one row per group (drawAt compacts them). */
const compactionDue = new Set<string>();

/**
 * The live counts without a tag filter, from the kept deltas (subnet_counts, kept by triggers: the
 * migration says how): one read of the network's few rows per subnet instead of every host and
 * address. The hosts still drawn are read by subnet (the addresses' subnet index): those of the
 * subnets left open and of subnets outside the network; the hosts with no address are the kept rows'
 * own (kind 'b' by host).
 */
export async function keptL3Counts(db: Db, organizationId: string, networkId: string, includeHidden: boolean): Promise<L3Counts> {
  // The groups that count (n not 0), and one row 't' with the deltas of all groups: compaction is due when they are many.
  const rows = await db.query<{ kind: 'a' | 'b' | 'h' | 't'; subnet_id: string | null; host_id: string | null; known: boolean; hidden: boolean; n: number }>(
    `with k as (select kind, subnet_id, host_id, hidden, sum(n)::int as n, count(*)::int as deltas from subnet_counts
                where organization_id = ? and network_id = ? group by kind, subnet_id, host_id, hidden)
     select k.kind, k.subnet_id, k.host_id, k.hidden, k.n, k.subnet_id in (select id from subnets y where y.organization_id = ? and y.network_id = ?) as known
       from k where k.n <> 0
     union all
     select 't', null, null, false, coalesce(sum(k.deltas), 0)::int, false from k`,
    [organizationId, networkId, organizationId, networkId],
  );
  const groups = rows.filter((r) => r.kind !== 't');
  if (rows.find((r) => r.kind === 't')!.n > 2 * groups.length + 100) compactionDue.add(`${organizationId}/${networkId}`);
  const shown = groups.filter((r) => includeHidden || !r.hidden);
  const perSubnet = new Map<string | null, number>();
  for (const r of shown) if (r.kind !== 'h') perSubnet.set(r.known ? r.subnet_id : null, (perSubnet.get(r.known ? r.subnet_id : null) ?? 0) + r.n);
  const outside = shown.filter((r) => r.kind === 'a' && !r.known).map((r) => r.subnet_id!);
  // The hosts with no address, by id (kind 'b' rows carry their host).
  const bare = shown.filter((r) => r.kind === 'b' && r.n > 0).map((r) => r.host_id!);
  const hidden = includeHidden ? 0 : groups.filter((r) => r.kind === 'h' && r.hidden).reduce((sum, r) => sum + r.n, 0);
  const hostsDrawn = async (collapsedIds: string[]) => {
    const collapsed = new Set(collapsedIds);
    const open = [...perSubnet.keys()].filter((id): id is string => id !== null && !collapsed.has(id)).concat(outside);
    const [dependencies, dp] = dependencyHosts(organizationId, networkId, undefined);
    const found = await db.query<{ id: string }>(
      `select a.host_id as id from ip_addresses a
         join hosts h on h.organization_id = a.organization_id and h.id = a.host_id and h.network_id = a.network_id
        where a.organization_id = ? and a.network_id = ? and a.subnet_id = any(?::uuid[]) and (? or not h.hidden)
       union
       ${dependencies}`,
      [organizationId, networkId, open, includeHidden, ...dp],
    );
    return [...new Set([...bare, ...found.map((r) => r.id)])];
  };
  return { counts: [...perSubnet].map(([subnet_id, n]) => ({ subnet_id, n })), filteredOut: async () => ({ hidden, untagged: 0 }), hostsDrawn };
}

/**
 * The network's kept deltas summed into one row per group. Safe beside writers: the delete takes only
 * the rows its snapshot sees (a writer's rows committed later stay, to be summed next time), and a
 * transaction-level advisory lock keeps two compactions of one network apart.
 */
export async function compactSubnetCounts(db: Db, organizationId: string, networkId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const lock = await tx.one<{ held: boolean }>(`select pg_try_advisory_xact_lock(hashtext('subnet_counts:' || ?::text)) as held`, [networkId]);
    if (!lock!.held) return;
    await tx.query(
      `with d as (delete from subnet_counts where organization_id = ? and network_id = ? returning subnet_id, host_id, hidden, kind, n)
       insert into subnet_counts (organization_id, network_id, subnet_id, host_id, hidden, kind, n)
       select ?::uuid, ?::uuid, subnet_id, host_id, hidden, kind, sum(n)::int from d group by subnet_id, host_id, hidden, kind having sum(n) <> 0`,
      [organizationId, networkId, organizationId, networkId],
    );
  });
}

/** Compacts the network's kept counts if a read found them due (not inside a caller's transaction). */
async function compactIfDue(db: Db, organizationId: string, networkId: string): Promise<void> {
  const key = `${organizationId}/${networkId}`;
  if (!compactionDue.has(key) || db.em.isInTransaction()) return;
  compactionDue.delete(key);
  await compactSubnetCounts(db, organizationId, networkId);
}

/** A drawing's task: the graph as objects (the layout worker), or its nodes and edges as JSON bytes (an answer). */
type DrawTask = 'draw' | 'drawJson';

const NOW_SQL = `select to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`;
/** The network's tables as PostgreSQL names them (their history: every change of the network). */
const INVENTORY_TABLES = NETWORK_TABLES.map((t) => TABLES[t].sql);

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
  const drawn = await readTransaction(db, async (tx) => {
    const asOf = q.at ?? (await tx.one<{ now: string }>(NOW_SQL))!.now;
    return { ...(await graphJsonAt(tx, organizationId, q, q.at)), asOf };
  });
  await compactIfDue(db, organizationId, q.network_id);
  return drawn;
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

/**
 * `drawnAtEveryTick`: the hosts drawn at every tick, the others drawn once (null: every host at
 * every tick; 'find': hostsToCompare over the window decides, and every host at every tick where it
 * answers undefined or nothing changed).
 */
async function timelineOf<K extends 'timeline' | 'timelineJson'>(db: Db, organizationId: string, q: IntervalQuery & { to: string }, task: K, drawnAtEveryTick: string[] | null | 'find' = 'find') {
  const buckets = await changeBuckets(db, organizationId, q.network_id, q.from, q.to, MAX_TICKS - 1);
  // Every instant drawn from one read of each history table (`from` in the ticks' own format).
  const from = (await db.one<{ t: string }>(`select ${US('?::timestamptz')} as t`, [q.from]))!.t;
  const spanned = span([from, buckets.at(-1)?.tick ?? from]);
  const hostIds = drawnAtEveryTick === 'find'
    ? (buckets.length ? await hostsToCompare(db, organizationId, q, q.from, q.to, 'span') : undefined)
    : drawnAtEveryTick ?? undefined;
  // What is drawn: the rows valid anywhere in the span at every tick, or the compared hosts' rows at
  // every tick and the network as of `from` once (the compared hosts' rows there are counted too: a
  // bound, not an exact count). These bound each tick's drawing, so this many ticks stay within TIMELINE_MAX_DRAWN.
  const perTick = await countElements(db, organizationId, q.network_id, spanned, hostIds);
  // The hosts drawn once are as they were at `from` at every tick, and still are when nothing changed
  // after `to` (an answer up to now): then read from the live tables by their network indexes, not
  // as of an instant from the history tables (which reads every state of the network).
  const onceAt = hostIds && (await changedAfter(db, organizationId, q.network_id, q.to) ? from : undefined);
  // A budgeted l3 timeline (max_nodes given) counts the hosts drawn once as the drawn map does and
  // reads only those some frame leaves open (timelineBudget); which they are is known once the
  // ticks are, so the ticks are first chosen as if none were drawn once, then fewer if they must.
  const budget = hostIds && q.view === 'l3' && (q.max_nodes ?? Number.MAX_SAFE_INTEGER) < Number.MAX_SAFE_INTEGER
    ? await timelineBudget(db, organizationId, q as IntervalQuery & { to: string; max_nodes: number }, onceAt, hostIds)
    : undefined;
  const fitting = (onceDrawn: number) => Math.min(MAX_TICKS, Math.floor(Math.max(0, TIMELINE_MAX_DRAWN - onceDrawn) / Math.max(1, perTick)));
  let onceDrawn = hostIds && !budget ? await countElements(db, organizationId, q.network_id, onceAt) : 0;
  let grouped: ChangeBucket[] = [];
  const tickRowsFor = (drawnOnce: number) => {
    const fit = fitting(drawnOnce);
    if (fit < 2 && buckets.length) {
      throw new AppError('validation_failed', {
        field: 'from',
        reason: `this view holds ${drawnOnce + perTick} elements in this interval: two instants of it would draw more than ${TIMELINE_MAX_DRAWN}; filter by tag_ids or read another view`,
      });
    }
    grouped = mergeBuckets(buckets, fit - 1);
    return [from, ...grouped.map((b) => b.tick)];
  };
  let tickRows = tickRowsFor(onceDrawn);
  let frames = budget && await budget.frames(tickRows);
  let drawnOnce: string[] | undefined;
  if (budget && !frames) {
    // Near the budget or within it at every tick: every host drawn (once or at every tick), the union shaped.
    onceDrawn = await countElements(db, organizationId, q.network_id, onceAt);
    tickRows = tickRowsFor(onceDrawn);
  } else if (budget && frames) {
    const collapsedThroughout = frames.map((f) => new Set(f.collapsed.keys())).reduce((x, y) => new Set([...x].filter((id) => y.has(id))));
    drawnOnce = await budget.hostsDrawnOnce([...collapsedThroughout]);
    onceDrawn = await countElements(db, organizationId, q.network_id, onceAt, drawnOnce);
    if (onceDrawn + perTick * tickRows.length > TIMELINE_MAX_DRAWN) {
      // Fewer ticks: a subset of these (merging cuts at fewer of the same pauses), so each collapses
      // at least the subnets collapsed at all of these, and the hosts read are still enough.
      tickRows = tickRowsFor(onceDrawn);
      frames = await budget.frames(tickRows, true);
    }
  }
  const ticks = [q.from, ...tickRows.slice(1)];
  const size = onceDrawn + perTick * ticks.length;
  const all = await rowsFor(db, task, size, organizationId, q.network_id, spanned, hostIds);
  const untouched = hostIds && { rows: await rowsFor(db, task, size, organizationId, q.network_id, onceAt, frames ? drawnOnce : undefined), hostIds };
  // Budgeted: drawn with the drawn map's options (budgetedL3: max_nodes applies by the counts, expand only to subnets).
  const options = frames
    ? { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: Number.MAX_SAFE_INTEGER }
    // expand also opens l3's summaries (graph.ts quietFolds), which the drawing itself decides.
    : { tagIds: q.tag_ids, includeHidden: q.include_hidden, maxNodes: Number.MAX_SAFE_INTEGER, expand: q.expand };
  const union = await cpuPool().run(organizationId, task, {
    all, instants: tickRows, ticks, view: q.view, options,
    maxNodes: q.max_nodes ?? Number.MAX_SAFE_INTEGER, expand: q.expand, maxDrawn: TIMELINE_MAX_DRAWN, ...(untouched ? { untouched } : {}),
    ...(frames ? { frames } : {}),
  } as TaskInput<K>, size) as TaskOutput<'timeline'> | TaskOutput<'timelineJson'> as TaskOutput<K>;
  if ('refused' in union) {
    // Not reached while `fit` bounds the ticks (kept as the thread's own guard).
    throw new AppError('validation_failed', {
      field: 'from',
      reason: `this timeline would draw ${union.refused} elements (${ticks.length} instants × the elements at each), more than ${TIMELINE_MAX_DRAWN}: choose a shorter interval, filter by tag_ids or read another view`,
    });
  }
  return { ticks, tick_changes: [0, ...grouped.map((b) => b.changes)], ...(union as Exclude<TaskOutput<K>, { refused: number }>) };
}

/**
 * A timeline is drawn as the budgeted map's frames from this many times max_nodes elements at some
 * tick. Below it every host is drawn (cheap at that size) and the union is shaped as a whole: a
 * union keeps each node as last drawn, so a subnet collapsed at some ticks and open at others (a
 * network near its budget) is shown one way throughout, where a whole shaping collapses it at every tick.
 */
const BUDGETED_TIMELINE_FROM = 2;

/** What a budgeted timeline's frame at a tick collapses (with its count, as the drawn map's card says) and filters out. */
export interface TimelineFrame { collapsed: Map<string, Record<string, number>>; filteredOut: FilteredOut }

/**
 * The drawn map's budget (budgetedL3) over a timeline's ticks, in l3 with max_nodes: the elements
 * per subnet at each tick are those of the hosts drawn once (counted in SQL as the map counts them,
 * as of `onceAt`: the kept counts when that is now and no tag filters, else a scan), less the
 * touched hosts' there, plus the touched hosts' at the tick (their few rows, one statement for every
 * tick); each tick collapses what chooseCollapsed chooses from them, as the map at that instant
 * does. Of the hosts drawn once only those some tick leaves open are read (hostsDrawnOnce): what
 * a timeline of a large network costs follows its changes and the budget, not the network.
 * `frames` answers undefined when no tick holds more than BUDGETED_TIMELINE_FROM times the budget
 * (unless `always`): every host is drawn and the union shaped.
 */
async function timelineBudget(db: Db, organizationId: string, q: IntervalQuery & { to: string; max_nodes: number }, onceAt: string | undefined, touched: string[]) {
  const tags = q.tag_ids?.length ? q.tag_ids : null;
  const base = !onceAt && !tags ? await keptL3Counts(db, organizationId, q.network_id, q.include_hidden) : await scannedL3Counts(db, organizationId, q, onceAt);
  const baseFiltered = await base.filteredOut();
  type Counted = { perSubnet: Map<string | null, number>; hidden: number; untagged: number };
  /** The touched hosts' elements per subnet (null: in no subnet of the network then, or no address) and filtered out, at each of `tickRows`. */
  const touchedAt = async (tickRows: string[]): Promise<Counted[]> => {
    const at = (alias: string) => `tstzrange(${alias}.valid_from, ${alias}.valid_to) @> w.at`;
    const rows = await db.query<{ k: number; subnet_id: string | null; n: number; hidden: number; untagged: number }>(
      `with w(k, at) as (select * from unnest(?::int[], ?::timestamptz[])),
       h as materialized (
         select w.k, h.id, (? or not h.hidden) and (?::uuid[] is null or h.tags && ?::uuid[]) as visible, h.hidden and not ? as hidden,
                (? or not h.hidden) and ?::uuid[] is not null and not (h.tags && ?::uuid[]) as untagged
         from w join hosts_history h on h.organization_id = ? and h.network_id = ? and h.id = any(?::uuid[]) and ${at('h')}),
       a as materialized (
         select w.k, a.host_id, case when exists (select 1 from subnets_history y where y.organization_id = ? and y.network_id = ? and y.id = a.subnet_id and ${at('y')})
                                     then a.subnet_id end as subnet_id
         from w join ip_addresses_history a on a.organization_id = ? and a.network_id = ? and a.host_id = any(?::uuid[]) and ${at('a')})
       select h.k, a.subnet_id, count(*)::int as n, 0 as hidden, 0 as untagged from h join a on a.k = h.k and a.host_id = h.id where h.visible group by 1, 2
       union all
       select h.k, null, count(*) filter (where h.visible and b.host_id is null)::int, count(*) filter (where h.hidden)::int, count(*) filter (where h.untagged)::int
       from h left join (select distinct k, host_id from a) b on b.k = h.k and b.host_id = h.id group by 1`,
      [tickRows.map((_, k) => k), tickRows, q.include_hidden, tags, tags, q.include_hidden, q.include_hidden, tags, tags,
        organizationId, q.network_id, touched, organizationId, q.network_id, organizationId, q.network_id, touched],
    );
    const counted = tickRows.map((): Counted => ({ perSubnet: new Map(), hidden: 0, untagged: 0 }));
    for (const r of rows) {
      const c = counted[r.k]!;
      c.perSubnet.set(r.subnet_id, (c.perSubnet.get(r.subnet_id) ?? 0) + r.n);
      c.hidden += r.hidden;
      c.untagged += r.untagged;
    }
    return counted;
  };
  return {
    async frames(tickRows: string[], always = false): Promise<TimelineFrame[] | undefined> {
      // onceAt is the first tick (`from`), or now, which is the last tick's state (nothing changed after `to`).
      const counted = await touchedAt(tickRows);
      const atOnce = counted[onceAt ? 0 : tickRows.length - 1]!;
      const untouched = new Map<string | null, number>(base.counts.map((r) => [r.subnet_id, r.n]));
      for (const [id, n] of atOnce.perSubnet) untouched.set(id, (untouched.get(id) ?? 0) - n);
      const ticks = counted.map((c) => {
        const perSubnet = new Map(untouched);
        for (const [id, n] of c.perSubnet) perSubnet.set(id, (perSubnet.get(id) ?? 0) + n);
        const total = [...perSubnet.values()].reduce((sum, n) => sum + n, 0);
        const subnets = new Map([...perSubnet].filter((e): e is [string, number] => e[0] !== null).map(([id, n]) => [`subnet:${id}`, n]));
        const filteredOut = emptyFilteredOut();
        filteredOut.hidden_hosts = baseFiltered.hidden - atOnce.hidden + c.hidden;
        filteredOut.hosts_without_tag = baseFiltered.untagged - atOnce.untagged + c.untagged;
        return { subnets, total, filteredOut };
      });
      if (!always && ticks.every((t) => t.total <= BUDGETED_TIMELINE_FROM * q.max_nodes)) return undefined;
      return ticks.map(({ subnets, total, filteredOut }) => {
        // As budgetedL3: a tick within the budget collapses nothing.
        const chosen = total > q.max_nodes ? chooseCollapsed(subnets, total, { maxNodes: q.max_nodes, expand: q.expand }, filteredOut) : new Set<string>();
        return { collapsed: new Map([...chosen].map((id) => [id, { ip_address: subnets.get(id)! }])), filteredOut };
      });
    },
    /** The hosts drawn once that a frame may show: outside the subnets collapsed at every tick (node ids), or serving a dependency. */
    async hostsDrawnOnce(collapsedThroughout: string[]): Promise<string[]> {
      const drawnAtEveryTick = new Set(touched);
      return (await base.hostsDrawn(collapsedThroughout.map((id) => id.slice('subnet:'.length)))).filter((h) => !drawnAtEveryTick.has(h));
    },
  };
}

/** Whether anything of the network, or a tag of its organization, began or ended after `at` (the history tables' change indexes). */
async function changedAfter(db: Db, organizationId: string, networkId: string, at: string): Promise<boolean> {
  const parts = INVENTORY_TABLES.flatMap((t) => [
    `select 1 from ${t}_history where organization_id = ? and network_id = ? and valid_from > ?`,
    `select 1 from ${t}_history where organization_id = ? and network_id = ? and valid_to > ?`,
  ]);
  const row = await db.one<{ changed: boolean }>(
    `select exists (${parts.join(' union all ')}) or exists (select 1 from tags_history t where t.organization_id = ? and (t.valid_from > ? or t.valid_to > ?)) as changed`,
    [...parts.flatMap(() => [organizationId, networkId, at]), organizationId, at, at],
  );
  return row!.changed;
}

/**
 * A timeline's parts, each in its own read: the hosts it draws at every tick, and its union with
 * given hosts drawn at every tick and the rest once (null: every host at every tick), for the spec
 * that checks the two agree.
 */
export const timelineParts = {
  drawnAtEveryTick: (db: Db, organizationId: string, q: IntervalQuery & { to: string }) =>
    readTransaction(db, (tx) => hostsToCompare(tx, organizationId, q, q.from, q.to, 'span')),
  draw: (db: Db, organizationId: string, q: IntervalQuery & { to: string }, hostIds: string[] | null) =>
    readTransaction(db, (tx) => timelineOf(tx, organizationId, q, 'timeline', hostIds)),
};

/** `alias`'s row has a state boundary (it began or ended) in (from, to]: parameters from, to, from, to. */
const boundaryIn = (alias: string) => `(${alias}.valid_from > ? and ${alias}.valid_from <= ? or ${alias}.valid_to > ? and ${alias}.valid_to <= ?)`;
/** The same for a row of the network: parameters organization, network, from, to, from, to. */
const changedIn = (alias: string) => `${alias}.organization_id = ? and ${alias}.network_id = ? and ${boundaryIn(alias)}`;
/** `alias`'s row was valid at `from` or at `to`: parameters from, to. */
const validAtEitherEnd = (alias: string) => `(tstzrange(${alias}.valid_from, ${alias}.valid_to) @> ?::timestamptz or tstzrange(${alias}.valid_from, ${alias}.valid_to) @> ?::timestamptz)`;
/** `alias`'s row was valid at some instant of [from, to] (a timeline draws every tick between): parameters from, to. */
const validWithin = (alias: string) => `tstzrange(${alias}.valid_from, ${alias}.valid_to) && tstzrange(?::timestamptz, ?::timestamptz, '[]')`;
/** `alias`'s row was valid over the whole of [from, to]: parameters from, to. */
const validThroughout = (alias: string) => `tstzrange(${alias}.valid_from, ${alias}.valid_to) @> tstzrange(?::timestamptz, ?::timestamptz, '[]')`;
/**
 * What hostsToCompare's hosts are drawn at: the window's two ends (a diff), or every instant of it
 * (a timeline, whose bounded drawing also needs the neighbours' neighbours: see closeOverEdges).
 */
type Over = 'ends' | 'span';

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
async function hostsToCompare(db: Db, organizationId: string, q: IntervalQuery, from: string, to: string, over: Over = 'ends'): Promise<string[] | undefined> {
  if (q.view === 'l2') return undefined;
  const validAtEither = over === 'span' ? validWithin : validAtEitherEnd;
  // Every statement names the organization as well as the network (and joins within it): it reads the organization's partition only.
  const window = [organizationId, q.network_id, from, to, from, to];
  if (q.view === 'application') {
    const tags = await db.one(`select 1 from tags_history t where t.organization_id = ? and ${boundaryIn('t')} limit 1`, [organizationId, from, to, from, to]);
    if (tags) return undefined;
  }
  const hosts = await db.query<{ host_id: string; own: boolean }>(...changedHosts(organizationId, window));
  // When most hosts changed themselves, drawing everything costs less than finding and filtering by
  // them. The network's hosts are its kept count (subnet_counts, a few rows per subnet): a choice of
  // cost only (both ways draw the same diff), so today's count serves a past window too; counting
  // the states valid at either instant walked every older state of the network.
  const changed = new Set(hosts.filter((r) => r.own).map((r) => r.host_id)).size;
  if (changed) {
    const hostsNow = await db.one<{ n: number }>(
      `select coalesce(sum(n), 0)::int as n from subnet_counts where organization_id = ? and network_id = ? and kind = 'h'`, [organizationId, q.network_id]);
    if (changed * 2 > hostsNow!.n) return undefined;
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
  if (over === 'span') return closeOverSpan(db, organizationId, q, from, to, compare, deps, links);
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
 * hostsToCompare over every instant of [from, to] (a timeline), closed: a timeline draws the hosts
 * outside the set once and only those in it at every tick, so every edge and every summary must lie
 * wholly on one side. A diff only needs the items that differ to be right; here the set is grown
 * until no virtualization pair, dependency (members of one, or of a changed one) or subnet's fold of
 * quiet hosts joins a host in it to one outside, at any instant of the window (a dependency's member
 * host brings that host's other dependencies, a VM brought by its hypervisor may be quiet and bring
 * its subnet's quiet hosts, which may be VMs in turn).
 */
async function closeOverSpan(db: Db, organizationId: string, q: IntervalQuery, from: string, to: string, compare: Set<string>,
  deps: Array<{ id: string; members: any; changed: boolean }>, links: Array<{ a: string; b: string | null; dependency_id: string | null }>): Promise<string[]> {
  const neighbours = new Map<string, Set<string>>(); // host → the hosts a virtualization pair joins it to
  const join = (a: string, b: string) => (neighbours.get(a) ?? neighbours.set(a, new Set()).get(a)!).add(b);
  const hostsOfMember = new Map<string, Set<string>>();
  for (const l of links) {
    if (l.dependency_id === 'virtualization') { join(l.a, l.b!); join(l.b!, l.a); }
    else (hostsOfMember.get(l.a) ?? hostsOfMember.set(l.a, new Set()).get(l.a)!).add(l.b!);
  }
  const depsOfHost = new Map<string, string[][]>(); // host → the member hosts of each dependency it is a member of
  const queue: string[] = [...compare];
  const add = (h: string) => { if (!compare.has(h)) { compare.add(h); queue.push(h); } };
  for (const d of deps) {
    const members = [...new Set([...(d.members?.service_ids ?? []), ...(d.members?.binding_ids ?? [])].flatMap((m: string) => [...(hostsOfMember.get(m) ?? [])]))];
    if (d.changed) members.forEach(add);
    for (const h of members) (depsOfHost.get(h) ?? depsOfHost.set(h, []).get(h)!).push(members);
  }
  for (;;) {
    while (queue.length) {
      const h = queue.pop()!;
      neighbours.get(h)?.forEach(add);
      for (const members of depsOfHost.get(h) ?? []) members.forEach(add);
    }
    if (!FOLDS_QUIET_HOSTS.has(q.view)) break;
    (await quietNeighboursWithin(db, organizationId, q.network_id, from, to, [...compare])).forEach(add);
    if (!queue.length) break;
  }
  return [...compare];
}

/**
 * quietNeighbours over every instant of [from, to]: the subnets a compared host may be quiet in at
 * some instant (no other address and no service valid over the whole window; a superset, which
 * costs a little and changes nothing), and those that changed, bring every host that may be quiet in
 * them. A host the window does not touch is the same throughout, so for it "may be" is "is".
 */
async function quietNeighboursWithin(db: Db, organizationId: string, networkId: string, from: string, to: string, hostIds: string[]): Promise<string[]> {
  const mayBeQuiet = (alias: string) => `not exists (select 1 from ip_addresses_history b where b.organization_id = ? and b.host_id = ${alias}.host_id and b.id <> ${alias}.id and ${validThroughout('b')})
       and not exists (select 1 from services_history s where s.organization_id = ? and s.host_id = ${alias}.host_id and ${validThroughout('s')})`;
  const quietParams = [organizationId, from, to, organizationId, from, to];
  // As quietNeighbours: each read starts from its own rows, materialized (by window, the planner took every address of it).
  const folds = await db.query<{ subnet_id: string }>(
    `with mine as materialized (select * from ip_addresses_history a where a.organization_id = ? and a.host_id = any(?::uuid[]) and a.subnet_id is not null)
     select a.subnet_id from mine a where ${validWithin('a')} and ${mayBeQuiet('a')}
     union select y.id from subnets_history y where ${changedIn('y')}`,
    [organizationId, hostIds, from, to, ...quietParams, organizationId, networkId, from, to, from, to],
  );
  if (!folds.length) return [];
  const rows = await db.query<{ host_id: string }>(
    `with theirs as materialized (select * from ip_addresses_history a where a.organization_id = ? and a.network_id = ? and a.subnet_id = any(?::uuid[]))
     select distinct a.host_id from theirs a where ${validWithin('a')} and ${mayBeQuiet('a')}`,
    [organizationId, networkId, folds.map((f) => f.subnet_id), from, to, ...quietParams],
  );
  return rows.map((r) => r.host_id);
}

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
  // Each read starts from its own few rows (the hosts' addresses, then the folded subnets'),
  // materialized: asked by instant, the planner took every address valid then (the network's size).
  const folds = await db.query<{ subnet_id: string }>(
    `with w(at) as (values (?::timestamptz), (?::timestamptz)),
     mine as materialized (select * from ip_addresses_history a where a.organization_id = ? and a.host_id = any(?::uuid[]) and a.subnet_id is not null)
     select distinct a.subnet_id from w join mine a on ${at('a')} where ${quiet('a')}
     union select y.id from subnets_history y where ${changedIn('y')}`,
    [from, to, organizationId, hostIds, organizationId, organizationId, organizationId, networkId, from, to, from, to],
  );
  if (!folds.length) return [];
  const rows = await db.query<{ host_id: string }>(
    `with w(at) as (values (?::timestamptz), (?::timestamptz)),
     theirs as materialized (select * from ip_addresses_history a where a.organization_id = ? and a.network_id = ? and a.subnet_id = any(?::uuid[]))
     select distinct a.host_id from w join theirs a on ${at('a')} where ${quiet('a')}`,
    [from, to, organizationId, networkId, folds.map((f) => f.subnet_id), organizationId, organizationId],
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
    ? await db.one<{ positions: string; routes: string | null }>(`select positions::text as positions, routes::text as routes from topology_layouts where view = ? and digest = ? and status = 'ready'`, [q.view, digest])
    : undefined;
  const pins = await readPins(db, organizationId, q.network_id, q.view);
  const network = await db.one<{ name: string }>(`select name from networks_history where organization_id = ? and id = ? order by valid_from desc limit 1`, [organizationId, q.network_id]);
  const title = `${network?.name ?? 'network'} — ${q.view} — ${asOf}`;
  // Laid out (when no layout is stored) and written on a thread; a layout made here is kept for every later answer.
  const { text, made } = await cpuPool().run(organizationId, 'export', { format: q.format, graph, stored: stored?.positions, storedRoutes: stored?.routes ?? undefined, pins, title }, graph.nodeIds.length);
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
    const key = drawingKey(q, lastScan);
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
 * (tags: in the organization) in a table it is drawn from (declaration.ts), and at most MAX_PINS per network view.
 */
export const MAX_PINS = MAX_NODES_CAP;

async function checkPins(db: Db, organizationId: string, networkId: string, view: View, nodeIds: string[]): Promise<void> {
  const refuse = (id: string, reason: string) => { throw new AppError('validation_failed', { field: `positions.${id}`, reason }); };
  const byKind = new Map<string, string[]>();
  for (const id of nodeIds) {
    const [kind, entity] = id.split(':') as [string, string];
    if (!nodeSources(view, kind)) refuse(id, `the ${view} view draws no node of kind '${kind}'`);
    (byKind.get(kind) ?? byKind.set(kind, []).get(kind)!).push(entity);
  }
  for (const [kind, ids] of byKind) {
    // One statement over the tables the kind is drawn from (an l2 port: an interface, or an address).
    const reads = nodeSources(view, kind)!.map((table): [string, unknown[]] => {
      const { sql, owner } = TABLES[table];
      return owner === 'organization'
        ? [`select id::text from ${sql} where organization_id = ? and id = any(?::uuid[])`, [organizationId, ids]]
        : [`select id::text from ${sql} where organization_id = ? and network_id = ? and id = any(?::uuid[])`, [organizationId, networkId, ids]];
    });
    const found = new Set((await db.query<{ id: string }>(reads.map(([sql]) => sql).join(' union all '), reads.flatMap(([, p]) => p))).map((r) => r.id));
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
