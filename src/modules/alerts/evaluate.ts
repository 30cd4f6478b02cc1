// What a Network session changed, turned into one alert digest per session. Called in
// the transaction that ends the session (src/modules/discovery/ingest.ts, after markPresence), and
// by the alert worker's sweep for hosts whose offline delay has passed since (no session then).
//
// Each kind is read from what ingest and presence already wrote, for the session's network only
// and the kinds an enabled rule asks for, and never of an ignored host:
//  - host_new: hosts the session created (as the session summary counts them);
//  - host_offline: hosts offline (hosts.offline_at) for at least the rule's offline_delay_minutes and
//    not reported yet for that offline period (an alert item names the host and the instant it went
//    offline); a host back before its delay is never reported;
//  - host_online: hosts the session saw again whose previous state was offline (hosts_history); when
//    the network has a host_offline rule, only a host whose offline period was reported (a host
//    that flapped within the delay gives neither);
//  - service_added / port_added: services or ports the session created on hosts it did not create
//    (a new host's services are part of "new host");
//  - service_removed / port_removed: services or ports that went offline while the session ran
//    (a stopped service, a closed port: discovery keeps them, offline) or that a person deleted then
//    (their last state closed since it began, no live row);
//  - mac_changed: an address the session wrote whose MAC differs from one the same IP answered
//    with before (on the same record, or another record of the network: a conflict or a spoof);
//  - vendor_new: a MAC vendor (from the OUI) the network had never seen before the session.
// Rules then pick their kind's items (host_offline: by their own delay); all the picked items are
// one `alerts` row; each channel gets one message with the items of the rules that name it: a
// webhook delivery (signed and retried by the webhook worker; the preset shapes it) and one e-mail
// per group of addresses that get the same items. A channel of a rule in its quiet hours is held
// until they end (the latest end among its rules).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { bind } from '../discovery/hostIngest.js';
import { quietUntil, type QuietHours } from './quietHours.js';

export const ALERT_KINDS = ['host_new', 'host_offline', 'host_online', 'service_added', 'service_removed', 'port_added', 'port_removed', 'mac_changed', 'vendor_new'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface AlertItem {
  kind: AlertKind;
  host_id: string | null;
  host_name: string | null;
  ip?: string | null;
  since?: string | null;
  service_id?: string; service_name?: string;
  port_id?: string; port?: number; protocol?: string;
  mac?: string | null; previous_mac?: string | null; vendor?: string | null;
}

interface RuleRow {
  id: string; kind: AlertKind; offline_delay_minutes: number; quiet_hours: QuietHours | null; webhook_ids: string[]; email_to: string[];
}

/** A timestamp as the items keep it (UTC, microseconds): compared as text in later evaluations. */
const utc = (expr: string) => `to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const firstIp = (hostId: string) => `(select host(i.ip_address) from ip_addresses i where i.organization_id = {org} and i.host_id = ${hostId} order by i.position, i.id limit 1)`;
const NEW_HOST = `h.first_discovery_id = s.id and h.created_at >= s.created_at`;

/** Whether an offline period (host, since) is in an alert of the network already. */
const reported = (hostId: string, since: string) => `exists (select 1 from alerts a where a.organization_id = {org} and a.network_id = {network}
  and a.items @> jsonb_build_array(jsonb_build_object('kind', 'host_offline', 'host_id', ${hostId}, 'since', ${since})))`;

const SESSION = `s as materialized (select id, created_at, phase from discovery_sessions where organization_id = {org} and id = {session})`;

/** One statement per kind; each answers rows `item` (jsonb). {session} kinds need the session. */
const QUERIES: Record<AlertKind, (opts: { offlineRule: boolean }) => string> = {
  host_new: () => `with ${SESSION}
    select jsonb_build_object('kind', 'host_new', 'host_id', h.id, 'host_name', h.name, 'ip', ${firstIp('h.id')}) as item
    from hosts h, s where h.organization_id = {org} and h.network_id = {network} and ${NEW_HOST} and not h.ignored order by h.name, h.id`,
  host_offline: () => `
    select jsonb_build_object('kind', 'host_offline', 'host_id', h.id, 'host_name', h.name, 'ip', ${firstIp('h.id')}, 'since', ${utc('h.offline_at')}) as item
    from hosts h where h.organization_id = {org} and h.network_id = {network} and h.offline_at is not null and not h.ignored
      and h.offline_at <= now() - make_interval(mins => {delay}) and not ${reported('h.id', utc('h.offline_at'))}
    order by h.name, h.id`,
  host_online: ({ offlineRule }) => `with ${SESSION},
    back as (select h.id, h.name, (select max(p.offline_at) from hosts_history p where p.organization_id = {org} and p.id = h.id
                                    and p.offline_at is not null and p.valid_to >= s.created_at) as since
             from hosts h, s where h.organization_id = {org} and h.network_id = {network} and h.offline_at is null and not h.ignored
               and h.last_seen_at >= s.created_at)
    select jsonb_build_object('kind', 'host_online', 'host_id', b.id, 'host_name', b.name, 'ip', ${firstIp('b.id')}, 'since', ${utc('b.since')}) as item
    from back b where b.since is not null ${offlineRule ? `and ${reported('b.id', utc('b.since'))}` : ''} order by b.name, b.id`,
  service_added: () => `with ${SESSION}
    select jsonb_build_object('kind', 'service_added', 'host_id', h.id, 'host_name', h.name, 'ip', ${firstIp('h.id')}, 'service_id', c.id, 'service_name', c.name) as item
    from services c join hosts h on h.organization_id = {org} and h.id = c.host_id, s
    where c.organization_id = {org} and c.network_id = {network} and c.first_discovery_id = s.id and c.created_at >= s.created_at
      and not h.ignored and not (${NEW_HOST}) order by h.name, c.name, c.id`,
  port_added: () => `with ${SESSION}
    select jsonb_build_object('kind', 'port_added', 'host_id', h.id, 'host_name', h.name, 'ip', ${firstIp('h.id')}, 'port_id', c.id, 'port', c.number, 'protocol', c.protocol) as item
    from ports c join hosts h on h.organization_id = {org} and h.id = c.host_id, s
    where c.organization_id = {org} and c.network_id = {network} and c.first_discovery_id = s.id and c.created_at >= s.created_at
      and not h.ignored and not (${NEW_HOST}) order by h.name, c.number, c.id`,
  service_removed: () => `with ${SESSION},
    stopped as (select c.id, c.name, c.host_id from services c, s
                where c.organization_id = {org} and c.network_id = {network} and c.offline_at >= s.created_at),
    deleted as (select distinct on (p.id) p.id, p.name, p.host_id from services_history p, s
                where p.organization_id = {org} and p.network_id = {network} and p.valid_to >= s.created_at
                  and not exists (select 1 from services c where c.organization_id = {org} and c.id = p.id)
                order by p.id, p.valid_from desc),
    gone as (select * from stopped union select * from deleted)
    select jsonb_build_object('kind', 'service_removed', 'host_id', g.host_id, 'host_name', h.name, 'ip', ${firstIp('g.host_id')}, 'service_id', g.id, 'service_name', g.name) as item
    from gone g left join hosts h on h.organization_id = {org} and h.id = g.host_id
    where coalesce(not h.ignored, true) order by h.name, g.name, g.id`,
  port_removed: () => `with ${SESSION},
    closed as (select c.id, c.number, c.protocol, c.host_id from ports c, s
               where c.organization_id = {org} and c.network_id = {network} and c.offline_at >= s.created_at),
    deleted as (select distinct on (p.id) p.id, p.number, p.protocol, p.host_id from ports_history p, s
                where p.organization_id = {org} and p.network_id = {network} and p.valid_to >= s.created_at
                  and not exists (select 1 from ports c where c.organization_id = {org} and c.id = p.id)
                order by p.id, p.valid_from desc),
    gone as (select * from closed union select * from deleted)
    select jsonb_build_object('kind', 'port_removed', 'host_id', g.host_id, 'host_name', h.name, 'ip', ${firstIp('g.host_id')}, 'port_id', g.id, 'port', g.number, 'protocol', g.protocol) as item
    from gone g left join hosts h on h.organization_id = {org} and h.id = g.host_id
    where coalesce(not h.ignored, true) order by h.name, g.number, g.id`,
  mac_changed: () => `with ${SESSION}
    select jsonb_build_object('kind', 'mac_changed', 'host_id', h.id, 'host_name', h.name, 'ip', host(i.ip_address), 'mac', i.mac_address, 'previous_mac', prev.mac_address) as item
    from ip_addresses i join hosts h on h.organization_id = {org} and h.id = i.host_id
    cross join s
    cross join lateral (select p.mac_address from ip_addresses_history p
                        where p.organization_id = {org} and p.network_id = {network} and p.ip_address = i.ip_address and p.mac_address is not null
                          and upper(p.mac_address) <> upper(i.mac_address) and p.valid_from < s.created_at
                          and (p.id <> i.id or p.valid_to >= s.created_at)
                        order by p.valid_from desc limit 1) prev
    where i.organization_id = {org} and i.network_id = {network} and i.last_discovery_id = s.id and i.mac_address is not null and not h.ignored
    order by i.ip_address, i.id`,
  vendor_new: () => `with ${SESSION}
    select distinct on (i.mac_vendor) jsonb_build_object('kind', 'vendor_new', 'host_id', h.id, 'host_name', h.name, 'ip', host(i.ip_address), 'mac', i.mac_address, 'vendor', i.mac_vendor) as item
    from ip_addresses i join hosts h on h.organization_id = {org} and h.id = i.host_id, s
    where i.organization_id = {org} and i.network_id = {network} and i.last_discovery_id = s.id and i.mac_vendor is not null and not h.ignored
      and not exists (select 1 from ip_addresses_history p where p.organization_id = {org} and p.network_id = {network} and p.mac_vendor = i.mac_vendor and p.valid_from < s.created_at)
    order by i.mac_vendor, i.ip_address`,
};


/** One line of a digest, in words. */
export function describeItem(i: AlertItem): string {
  const host = `${i.host_name ?? i.host_id ?? 'a host'}${i.ip && i.ip !== i.host_name ? ` (${i.ip})` : ''}`;
  switch (i.kind) {
    case 'host_new': return `New host: ${host}`;
    case 'host_offline': return `Offline: ${host} since ${i.since}`;
    case 'host_online': return `Back online: ${host}`;
    case 'service_added': return `Service added: ${i.service_name} on ${host}`;
    case 'service_removed': return `Service removed: ${i.service_name} on ${host}`;
    case 'port_added': return `Port opened: ${i.port}/${String(i.protocol).toLowerCase()} on ${host}`;
    case 'port_removed': return `Port closed: ${i.port}/${String(i.protocol).toLowerCase()} on ${host}`;
    case 'mac_changed': return `Address ${i.ip} answers with a new MAC ${i.mac} (was ${i.previous_mac}) on ${i.host_name ?? i.host_id}`;
    case 'vendor_new': return `New vendor: ${i.vendor} (${i.mac}, ${host})`;
  }
}

const itemKey = (i: AlertItem) => JSON.stringify([i.kind, i.host_id, i.service_id ?? i.port_id ?? i.ip ?? null, i.since ?? null, i.mac ?? null]);

export interface Digest {
  alertId: string;
  items: AlertItem[];
  webhookDeliveries: number;
  emails: number;
}

/**
 * Evaluates the network's rules for what session `sessionId` changed (null: the offline sweep, which
 * reads only host_offline) and stores and queues the digest. Returns it, or null when no rule
 * wanted anything.
 */
export async function evaluateAlerts(db: Db, organizationId: string, networkId: string, sessionId: string | null, now = new Date()): Promise<Digest | null> {
  const rules = await db.query<RuleRow>(
    `select id, kind, offline_delay_minutes, quiet_hours, webhook_ids, email_to from alert_rules
     where organization_id = ? and network_id = ? and enabled ${sessionId ? '' : `and kind = 'host_offline'`} order by created_at, id`,
    [organizationId, networkId]);
  if (!rules.length) return null;
  // One evaluation of a network at a time (a session's end and the offline sweep): an offline period is reported once.
  await db.query(`select pg_advisory_xact_lock(hashtext(?))`, [`alerts:${organizationId}:${networkId}`]);
  const values = { org: organizationId, network: networkId, session: sessionId };
  const offlineRules = rules.filter((r) => r.kind === 'host_offline');
  const byKind = new Map<AlertKind, AlertItem[]>();
  for (const kind of new Set(rules.map((r) => r.kind))) {
    if (kind !== 'host_offline' && !sessionId) continue;
    const delay = kind === 'host_offline' ? Math.min(...offlineRules.map((r) => r.offline_delay_minutes)) : 0;
    const rows = await db.query<{ item: AlertItem }>(...bind(QUERIES[kind]({ offlineRule: offlineRules.length > 0 }), { ...values, delay }));
    byKind.set(kind, rows.map((r) => r.item));
  }

  // What each rule picks, and each channel's items and hold.
  const all = new Map<string, AlertItem>();
  const webhooks = new Map<string, { items: Map<string, AlertItem>; hold: Date | null }>();
  const addresses = new Map<string, { items: Map<string, AlertItem>; hold: Date | null }>();
  const later = (a: Date | null, b: Date | null) => (!a ? b : !b ? a : a > b ? a : b);
  for (const rule of rules) {
    let items = byKind.get(rule.kind) ?? [];
    if (rule.kind === 'host_offline') items = items.filter((i) => Date.parse(i.since!) <= now.getTime() - rule.offline_delay_minutes * 60_000);
    if (!items.length) continue;
    const hold = quietUntil(rule.quiet_hours, now);
    for (const item of items) all.set(itemKey(item), item);
    const add = (channels: Map<string, { items: Map<string, AlertItem>; hold: Date | null }>, key: string) => {
      const c = channels.get(key) ?? { items: new Map(), hold: null };
      channels.set(key, c);
      for (const item of items) c.items.set(itemKey(item), item);
      c.hold = later(c.hold, hold);
    };
    for (const id of rule.webhook_ids) add(webhooks, id);
    for (const address of rule.email_to) add(addresses, address.toLowerCase());
  }
  if (!all.size) return null;

  const items = [...all.values()];
  const network = await db.one<{ name: string }>(`select name from networks where organization_id = ? and id = ?`, [organizationId, networkId]);
  const alertId = randomUUID();
  const holds = [...webhooks.values(), ...addresses.values()].map((c) => c.hold);
  const heldUntil = holds.length && holds.every(Boolean) ? holds.reduce((a, b) => later(a, b)) : null;
  await db.query(
    `insert into alerts (id, organization_id, network_id, session_id, items, held_until) values (?, ?, ?, ?, ?::jsonb, ?)`,
    [alertId, organizationId, networkId, sessionId, JSON.stringify(items), heldUntil],
  );
  const message = (list: AlertItem[]) => ({
    title: `${network?.name ?? 'Network'}: ${list.length} change${list.length === 1 ? '' : 's'}`,
    lines: list.map(describeItem),
  });

  // Webhooks: one delivery each (of an enabled endpoint of the organization), signed and retried by the webhook worker.
  const deliveries = [...webhooks].map(([webhookId, c]) => {
    const list = [...c.items.values()];
    return {
      id: randomUUID(), webhook_id: webhookId, next_attempt_at: (c.hold ?? now).toISOString(),
      payload: {
        type: 'alert.digest', timestamp: now.toISOString(),
        data: { alert_id: alertId, network_id: networkId, network_name: network?.name ?? null, session_id: sessionId, ...message(list), items: list },
      },
    };
  });
  const written = deliveries.length ? await db.query(
    `insert into webhook_deliveries (id, webhook_id, organization_id, type, payload, next_attempt_at)
     select d.id, d.webhook_id, w.organization_id, 'alert.digest', d.payload, d.next_attempt_at
     from jsonb_to_recordset(?::jsonb) as d(id uuid, webhook_id uuid, payload jsonb, next_attempt_at timestamptz)
     join webhooks w on w.organization_id = ? and w.id = d.webhook_id and w.enabled
     returning id`,
    [JSON.stringify(deliveries), organizationId]) : [];

  // E-mail: the addresses that get the same items share one message.
  const mails = new Map<string, { to: string[]; items: AlertItem[]; hold: Date | null }>();
  for (const [address, c] of addresses) {
    const key = `${[...c.items.keys()].sort().join('|')}@${c.hold?.toISOString() ?? ''}`;
    const mail = mails.get(key) ?? { to: [], items: [...c.items.values()], hold: c.hold };
    mails.set(key, mail);
    mail.to.push(address);
  }
  for (const mail of mails.values()) {
    const { title, lines } = message(mail.items);
    await db.query(
      `insert into alert_emails (id, organization_id, alert_id, recipients, subject, body, next_attempt_at) values (?, ?, ?, ?::text[], ?, ?, ?)`,
      [randomUUID(), organizationId, alertId, mail.to, `[netinventory] ${title}`, `${lines.join('\n')}\n`, (mail.hold ?? now).toISOString()],
    );
  }
  return { alertId, items, webhookDeliveries: written.length, emails: mails.size };
}

/** The session's network and whether it is a Network session: evaluated at its end. */
export async function evaluateSessionAlerts(db: Db, organizationId: string, sessionId: string): Promise<Digest | null> {
  const session = await db.one<{ network_id: string }>(
    `select network_id from discovery_sessions where organization_id = ? and id = ? and discovery_type->>'type' = 'Network'
       and phase = any(array['Complete', 'Failed', 'Cancelled'])`, [organizationId, sessionId]);
  if (!session) return null;
  return evaluateAlerts(db, organizationId, session.network_id, sessionId);
}

