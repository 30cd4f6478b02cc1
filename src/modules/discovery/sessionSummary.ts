// What a Network discovery session did to the inventory, computed by the server in one statement
// when the session ends and kept on it (discovery_sessions.summary, migration 20261128000002): hosts
// found, new, changed, unchanged and gone, services found, and the first new and gone hosts by id
// and name. It needs no report from the daemon, so Scanopy daemons get one too.
//
// It reads what ingest already writes (./hostIngest.ts), nothing more per host:
//  - found: the network's hosts whose last_discovery_id is the session (every report of a session
//    sets it, the unchanged-host path included);
//  - new: found hosts the session created (first_discovery_id is the session and the row is younger
//    than the session; a deleted host found again is a new row, so it counts as new);
//  - changed: other found hosts whose own columns, or a child (address, port, service, binding,
//    interface) the session wrote (a stopped service or a closed port too: offline), differ from
//    their state when the session began, or that lost a service while it ran (deleted). Provenance is left out of the comparison (source
//    metadata, discovery ids, timestamps): a Scanopy daemon dates every report, and another session
//    or daemon adds its own metadata entry, without anything of the host changing (nor does it make
//    a history state: source is volatile, migration 20261202000002);
//  - unchanged: the rest of the found hosts;
//  - gone: hosts of the network with an address in the subnets the session scanned that the
//    daemon's previous Network sessions found (its last Complete one before this, and any since)
//    and nothing has found since. Only for a Complete session: a failed or cancelled run's missing
//    hosts say nothing. A host gone once is compared with an older session next time, so it is
//    counted gone once, not after every run.
// A host that another daemon's session reports while this one runs moves to that session (its
// last_discovery_id); it then counts for that session, not this one.
import type { Db } from '../../core/db.js';
import { bind } from './hostIngest.js';

/** How many new and gone hosts a summary names (the counts are always whole). */
export const SUMMARY_HOSTS_LISTED = 50;

/** Columns that say where a state came from, not what it is: left out when deciding "changed". */
const PROVENANCE = ['source', 'first_discovery_id', 'last_discovery_id', 'last_seen_at', 'created_at', 'updated_at', 'valid_from', 'valid_to', 'lineage_id'];
/**
 * Presence that the summary reports on its own (offline, back online): a host's and an address's
 * offline_at is not a change of the host. A service's or a port's is (it stopped, it closed).
 */
const PRESENCE: Record<string, string[]> = { hosts: ['offline_at'], ip_addresses: ['offline_at'] };
const content = (alias: string, table = '') => `(to_jsonb(${alias}) - array[${[...PROVENANCE, ...(PRESENCE[table] ?? [])].map((c) => `'${c}'`).join(', ')}]::text[])`;

/** A live row `c` of `table` differs from its state when the session began (or did not exist then). */
const differsFromStart = (table: string) => `not exists (
  select 1 from (select p.* from ${table}_history p where p.organization_id = {org} and p.id = c.id and p.valid_from <= s.created_at
                 order by p.valid_from desc limit 1) p
  where (p.valid_to is null or p.valid_to > s.created_at) and ${content('p', table)} = ${content('c', table)})`;

/** A child of host `f` that the session wrote (new or changed) and that is not what it was when the session began. */
const childChanged = (table: string) => `exists (
  select 1 from ${table} c where c.organization_id = {org} and c.host_id = f.id and c.last_discovery_id = s.id and ${differsFromStart(table)})`;

const hostList = (from: string) => `(select coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'name', x.name) order by x.name, x.id), '[]'::jsonb)
  from (select id, name from ${from} order by name, id limit ${SUMMARY_HOSTS_LISTED}) x)`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The subnets a session scanned, as its daemon said in its update: the work's subnet_ids, which the
 * server filled with the approved subnets when it handed the work out (the stored session keeps
 * null). Null when the daemon named none (a --once run of our agent, or work handed out with nothing
 * approved): the summary then takes the subnets of the hosts the session found.
 */
export function scannedSubnetIds(discoveryType: unknown): string[] | null {
  const ids = (discoveryType as { subnet_ids?: unknown } | null)?.subnet_ids;
  if (!Array.isArray(ids)) return null;
  const valid = ids.filter((id): id is string => typeof id === 'string' && UUID.test(id));
  return valid.length ? valid : null;
}

/**
 * Computes and stores the summary of an ended Network session (anything else is left alone), in one
 * statement. Called where a session ends: the daemon's terminal update, a restart, the stalled sweep.
 */
export async function summarizeSession(db: Db, organizationId: string, sessionId: string, scanned: string[] | null = null): Promise<void> {
  const [sql, params] = bind(
    `with s as materialized (
       select id, network_id, daemon_id, created_at, phase from discovery_sessions
       where organization_id = {org} and id = {session} and discovery_type->>'type' = 'Network'),
     found as materialized (
       select h.id, h.name, h.first_discovery_id = s.id and h.created_at >= s.created_at as is_new, ${content('h', 'hosts')} as content
       from s join hosts h on h.organization_id = {org} and h.network_id = s.network_id and h.last_discovery_id = s.id),
     changed as materialized (
       select f.id from found f cross join s where not f.is_new and (
         not exists (select 1 from (select p.* from hosts_history p where p.organization_id = {org} and p.id = f.id and p.valid_from <= s.created_at
                                    order by p.valid_from desc limit 1) p
                     where (p.valid_to is null or p.valid_to > s.created_at) and ${content('p', 'hosts')} = f.content)
         or ${childChanged('ip_addresses')} or ${childChanged('ports')} or ${childChanged('services')} or ${childChanged('interfaces')}
         or exists (select 1 from services sv join bindings c on c.organization_id = {org} and c.service_id = sv.id
                    where sv.organization_id = {org} and sv.host_id = f.id and c.last_discovery_id = s.id and ${differsFromStart('bindings')})
         or exists (select 1 from services_history x where x.organization_id = {org} and x.host_id = f.id and x.valid_to >= s.created_at
                    and not exists (select 1 from services l where l.organization_id = {org} and l.id = x.id)))),
     scanned as materialized (
       select coalesce({scanned}::uuid[], (select array_agg(distinct i.subnet_id) from found f
                                           join ip_addresses i on i.organization_id = {org} and i.host_id = f.id), '{}'::uuid[]) as ids),
     last_complete as materialized (
       select c.id, c.created_at from s join discovery_sessions c on c.organization_id = {org} and c.daemon_id = s.daemon_id
       where c.discovery_type->>'type' = 'Network' and c.phase = 'Complete' and c.created_at < s.created_at
       order by c.created_at desc, c.id desc limit 1),
     earlier as materialized (
       select p.id from s join discovery_sessions p on p.organization_id = {org} and p.daemon_id = s.daemon_id
       where p.discovery_type->>'type' = 'Network' and p.created_at < s.created_at
         and p.created_at >= coalesce((select created_at from last_complete), '-infinity')),
     gone as materialized (
       select h.id, h.name from s join hosts h on h.organization_id = {org} and h.network_id = s.network_id
       where s.phase = 'Complete' and h.last_discovery_id in (select id from earlier)
         and exists (select 1 from ip_addresses i, scanned where i.organization_id = {org} and i.host_id = h.id and i.subnet_id = any(scanned.ids))),
     counts as (
       select count(*) as found, count(*) filter (where is_new) as new, (select count(*) from changed) as changed from found)
     update discovery_sessions d set summary = jsonb_build_object(
       'hosts_found', counts.found,
       'hosts_new', counts.new,
       'hosts_changed', counts.changed,
       'hosts_unchanged', counts.found - counts.new - counts.changed,
       'hosts_gone', case when s.phase = 'Complete' then (select count(*) from gone) end,
       'services_found', (select count(*) from found f join services sv on sv.organization_id = {org} and sv.host_id = f.id
                          where sv.offline_at is null and sv.source->'metadata' @> jsonb_build_array(jsonb_build_object('type', 'Network', 'daemon_id', s.daemon_id))),
       'new_hosts', ${hostList('found where is_new')},
       'gone_hosts', ${hostList('gone')},
       'changed_hosts', ${hostList('found where id in (select id from changed)')},
       'scanned_subnet_ids', to_jsonb((select ids from scanned)),
       'compared_with_session_id', (select id from last_complete))
     from s, counts where d.organization_id = {org} and d.id = s.id`,
    { org: organizationId, session: sessionId, scanned },
  );
  await db.query(sql, params);
}
