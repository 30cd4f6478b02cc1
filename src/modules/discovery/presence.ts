// Online and offline: when a Network session ends, the hosts it saw are online again, and, when it
// completed, the hosts and addresses of the subnets it scanned that it did not see go offline. A
// cancelled or failed run proves nothing missing. (Ports and services are marked as each host's
// report arrives: src/modules/discovery/hostIngest.ts, markStopped.) Only hosts discovery has seen (last_seen_at) take
// part: a host a person documented and no scan ever found has no presence to lose. An ignored host
// is never marked (a person said not to watch it). offline_at is state, not provenance: each
// change makes a history state and a `host.updated` event (migration 20261202000003).
import type { Db } from '../../core/db.js';
import type { Row } from '../../core/historyTable.js';
import { bind } from './hostIngest.js';
import { SUMMARY_HOSTS_LISTED } from './sessionSummary.js';

const SESSION = `with s as materialized (
       select id, network_id, created_at, coalesce(finished_at, now()) as ended, phase,
              array(select jsonb_array_elements_text(coalesce(summary->'scanned_subnet_ids', '[]'::jsonb)))::uuid[] as scanned
       from discovery_sessions
       where organization_id = {org} and id = {session} and discovery_type->>'type' = 'Network'
         and phase = any(array['Complete', 'Failed', 'Cancelled']))`;

/**
 * Marks presence once the session ended and summarizeSession stored its scanned subnets; returns the
 * hosts' counts. One update per direction and table (the history and event triggers read one
 * statement's transition tables).
 */
export async function markPresence(db: Db, organizationId: string, sessionId: string): Promise<{ back: number; offline: number }> {
  const values = { org: organizationId, session: sessionId };
  const back = await db.query(...bind(
    `${SESSION}
     update hosts h set offline_at = null from s
     where h.organization_id = {org} and h.network_id = s.network_id and h.offline_at is not null and h.last_seen_at >= s.created_at
     returning h.id, h.name`, values));
  const offline = await db.query(...bind(
    `${SESSION}
     update hosts h set offline_at = s.ended from s
     where s.phase = 'Complete' and h.organization_id = {org} and h.network_id = s.network_id
       and h.offline_at is null and not h.ignored and h.last_seen_at < s.created_at
       and exists (select 1 from ip_addresses i where i.organization_id = {org} and i.host_id = h.id and i.subnet_id = any(s.scanned))
     returning h.id, h.name`, values));
  // Addresses: one on a subnet the completed scan covered that it did not see is offline (also when
  // its host answered at another address). One it sees again is online at once (ingest clears it).
  await db.query(...bind(
    `${SESSION}
     update ip_addresses i set offline_at = s.ended from s
     where s.phase = 'Complete' and i.organization_id = {org} and i.network_id = s.network_id and i.subnet_id = any(s.scanned)
       and i.offline_at is null and i.last_seen_at < s.created_at
       and not exists (select 1 from hosts h where h.organization_id = {org} and h.id = i.host_id and h.ignored)`, values));
  // On the session's summary (the Changes page reads it): the counts, and the first hosts by name.
  const listed = (rows: Row[]) => rows.map((r) => ({ id: r.id, name: r.name }))
    .sort((x, y) => String(x.name).localeCompare(String(y.name)) || String(x.id).localeCompare(String(y.id))).slice(0, SUMMARY_HOSTS_LISTED);
  await db.query(
    `update discovery_sessions set summary = summary || ?::jsonb where organization_id = ? and id = ? and summary is not null`,
    [JSON.stringify({ hosts_offline: offline.length, hosts_back_online: back.length, offline_hosts: listed(offline), back_online_hosts: listed(back) }), organizationId, sessionId],
  );
  return { back: back.length, offline: offline.length };
}
