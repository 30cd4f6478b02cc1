// Search everywhere (the web app's Ctrl/Cmd+K): one statement per kind of thing, each bound to the
// organization and to the networks the caller may see, each cut at the limit; the results ranked
// together here (exact, then prefix, then contains; then by kind and label).
import type { Db } from '../../core/db.js';
import type { Scope } from '../../core/scope.js';
import { networkService } from '../networks/service.js';
import { SEARCH_KINDS } from './schemas.js';

type Kind = (typeof SEARCH_KINDS)[number];
type Match = 'exact' | 'prefix' | 'contains';
interface Found { kind: Kind; id: string; network_id: string | null; host_id: string | null; label: string; detail: string | null; match: Match }
interface Row { id: string; network_id: string | null; host_id: string | null; label: string; detail: string | null; key: string }

/** A LIKE pattern that takes the text literally. */
const literal = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);
/** A MAC's hex digits, upper case: "aa-bb.cc" and "AA:BB:CC" are the same search. */
const macDigits = (text: string) => text.replace(/[^0-9a-fA-F]/g, '').toUpperCase();

function matchOf(key: string, text: string): Match {
  const k = key.toLowerCase();
  const t = text.toLowerCase();
  return k === t ? 'exact' : k.startsWith(t) ? 'prefix' : 'contains';
}
const MATCH_ORDER: Record<Match, number> = { exact: 0, prefix: 1, contains: 2 };

export const searchService = {
  async search(db: Db, scope: Scope, q: { q: string; network_id?: string; limit: number }): Promise<Found[]> {
    if (q.network_id) await networkService.assertFilterable(db, scope, q.network_id);
    const text = q.q;
    const org = scope.organizationId;
    // Which networks: one, or every one the caller may see.
    const [inNetworks, networkParams]: [(alias: string) => string, unknown[]] = q.network_id
      ? [(a) => ` and ${a}.network_id = ?`, [q.network_id]]
      : scope.allNetworks ? [() => '', []] : [(a) => ` and ${a}.network_id = any(?::uuid[])`, [[...scope.networkIds]]];
    const contains = `%${literal(text)}%`;
    const prefix = `${literal(text)}%`;
    const mac = macDigits(text);
    const hostName = (alias: string) => `(select h.name from hosts h where h.organization_id = ? and h.id = ${alias}.host_id)`;
    const queries: Array<[Kind, Promise<Row[]>]> = [
      ['host', db.query<Row>(
        `select t.id, t.network_id, t.id as host_id, t.name as label, t.hostname as detail,
                case when t.name ilike ? then t.name else coalesce(t.hostname, t.name) end as key
         from hosts t where t.organization_id = ?${inNetworks('t')} and (t.name ilike ? or t.hostname ilike ?)
         order by (lower(t.name) = lower(?)) desc, t.name limit ?`,
        [contains, org, ...networkParams, contains, contains, text, q.limit])],
      ['ip_address', db.query<Row>(
        `select t.id, t.network_id, t.host_id, host(t.ip_address) as label, ${hostName('t')} as detail, host(t.ip_address) as key
         from ip_addresses t where t.organization_id = ?${inNetworks('t')} and host(t.ip_address) like ?
         order by t.ip_address limit ?`,
        [org, org, ...networkParams, prefix, q.limit])],
      ['service', db.query<Row>(
        `select t.id, t.network_id, t.host_id, t.name as label, ${hostName('t')} as detail, t.name as key
         from services t where t.organization_id = ?${inNetworks('t')} and t.name ilike ?
         order by (lower(t.name) = lower(?)) desc, t.name limit ?`,
        [org, org, ...networkParams, contains, text, q.limit])],
      ['subnet', db.query<Row>(
        `select t.id, t.network_id, null::uuid as host_id, coalesce(nullif(t.name, ''), t.cidr::text) as label, t.cidr::text as detail,
                case when t.cidr::text like ? then t.cidr::text else t.name end as key
         from subnets t where t.organization_id = ?${inNetworks('t')} and (t.cidr::text like ? or t.name ilike ?)
         order by t.cidr limit ?`,
        [prefix, org, ...networkParams, prefix, contains, q.limit])],
      // Tags belong to the organization: every caller of it may see their names.
      ['tag', db.query<Row>(
        `select t.id, null::uuid as network_id, null::uuid as host_id, t.name as label, t.description as detail, t.name as key
         from tags t where t.organization_id = ? and t.name ilike ? order by t.name limit ?`,
        [org, contains, q.limit])],
    ];
    // A MAC only when the text could be part of one (two hex digits at least, nothing else but separators).
    if (mac.length >= 2 && /^[0-9a-fA-F:.\- ]+$/.test(text)) {
      queries.push(['mac_address', db.query<Row>(
        `select t.id, t.network_id, t.host_id, t.mac_address as label, ${hostName('t')} as detail, replace(t.mac_address, ':', '') as key
         from ip_addresses t where t.organization_id = ?${inNetworks('t')} and t.mac_address is not null and replace(t.mac_address, ':', '') like ?
         order by t.mac_address limit ?`,
        [org, org, ...networkParams, `%${mac}%`, q.limit])]);
    }
    const found: Found[] = [];
    for (const [kind, rows] of queries) {
      for (const r of await rows) {
        found.push({ kind, id: r.id, network_id: r.network_id, host_id: r.host_id, label: r.label, detail: r.detail ?? null, match: matchOf(r.key ?? r.label, kind === 'mac_address' ? mac : text) });
      }
    }
    const kindOrder = (k: Kind) => SEARCH_KINDS.indexOf(k);
    return found
      .sort((a, b) => MATCH_ORDER[a.match] - MATCH_ORDER[b.match] || kindOrder(a.kind) - kindOrder(b.kind) || a.label.localeCompare(b.label) || a.id.localeCompare(b.id))
      .slice(0, q.limit);
  },
};
