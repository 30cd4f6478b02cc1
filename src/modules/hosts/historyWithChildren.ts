// A host's history with its children: every instant at which the host row or one of the
// children it owned then (IP addresses, ports, services, their bindings, interfaces) got a new state
// or lost one, newest first; each entry is the host as of that instant, with its children exactly as
// `GET /hosts/{id}?at=` answers them, and the list of what changed at that instant.
//
// Cost: one statement finds the page's instants; then one statement per table reads every state
// that overlaps the page's interval (the host's states, and the states of every child id the host
// owned in it, those owned by another host included, which is how a move is told apart from a
// creation). Each entry's children are then picked in memory: 7 statements whatever the number of
// children or instants, in one snapshot so they agree.
import Joi from 'joi';
import type { Db } from '../../core/db.js';
import { isoTimestamp, type HistoryTable, type Row } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { timestamp, uuid } from '../../http/schemas.js';
import { BINDING_ORDER, bindingTable } from '../bindings/table.js';
import { HOST_CHILD_ORDER } from './hostView.js';
import { interfaceTable } from '../interfaces/table.js';
import { ipAddressTable } from '../ipAddresses/table.js';
import { portTable } from '../ports/table.js';
import { serviceTable } from '../services/table.js';
import { hostResponse } from './response.js';
import { hostTable } from './table.js';
import { DEFAULT_HOST_EXPIRY_DAYS, hostStatus } from './presence.js';

/** Each entry carries the host's children (~56 KB for a host with 100 ports): 100 entries is ~6 MB (bench/README.md). */
export const HOST_HISTORY_MAX = 100;

export const CHANGE_ENTITIES = ['host', 'ip_address', 'port', 'service', 'binding', 'interface'] as const;
export const CHANGE_ACTIONS = ['created', 'updated', 'deleted', 'moved_in', 'moved_out'] as const;
type Entity = (typeof CHANGE_ENTITIES)[number];
type Action = (typeof CHANGE_ACTIONS)[number];

/** Columns that change without making a state (the triggers' volatile columns) or that every state changes. */
const NOT_A_CHANGE = new Set(['last_seen_at', 'last_discovery_id', 'updated_at', 'valid_from', 'valid_to']);

export const hostHistoryQuery = Joi.object({
  limit: Joi.number().integer().min(1).max(HOST_HISTORY_MAX).default(20).description(`At most this many entries (at most ${HOST_HISTORY_MAX})`),
  before: timestamp().description('Only entries that began before this instant: pass the last entry’s `valid_from` for the next (older) page; an answer shorter than `limit` is the last'),
});

const hostChange = Joi.object({
  entity: Joi.string().valid(...CHANGE_ENTITIES),
  id: uuid(),
  action: Joi.string().valid(...CHANGE_ACTIONS).description('moved_in / moved_out: the child came from / went to another host (consolidate)'),
  fields: Joi.array().items(Joi.string()).optional()
    .description('updated, moved_in: the columns that differ from its previous state (not last_seen_at, last_discovery_id, updated_at)'),
  label: Joi.string().description('For display: a host’s or service’s name, an address, `443/tcp`, an interface’s name, `https: 443/tcp` for a binding'),
  previous_label: Joi.string().optional().description('updated: the label before, when it differs'),
  other_host_id: uuid().optional().description('moved_in: the host it came from; moved_out: the host it went to'),
}).label('HostChange');

export const hostHistoryResponse = hostResponse.keys({
  valid_from: timestamp().description('When this state of the host with its children began: the host row or a child changed then'),
  valid_to: timestamp().allow(null).description('When the next one began (or the host was deleted); null for the current state'),
  changes: Joi.array().items(hostChange).description('What changed at `valid_from`: the host row (entity host) and its children, created, updated (which fields), deleted or moved'),
}).label('HostHistoryState');

interface Kind {
  entity: Exclude<Entity, 'host'>;
  table: HistoryTable;
  order: string;
  /** The column naming the owner: a host, or for bindings a service (owned by a host in turn). */
  parent: 'host_id' | 'service_id';
}

const HOST_KINDS: Kind[] = [
  { entity: 'ip_address', table: ipAddressTable, order: HOST_CHILD_ORDER.ip_addresses, parent: 'host_id' },
  { entity: 'port', table: portTable, order: HOST_CHILD_ORDER.ports, parent: 'host_id' },
  { entity: 'service', table: serviceTable, order: HOST_CHILD_ORDER.services, parent: 'host_id' },
  { entity: 'interface', table: interfaceTable, order: HOST_CHILD_ORDER.interfaces, parent: 'host_id' },
];
const BINDINGS: Kind = { entity: 'binding', table: bindingTable, order: BINDING_ORDER, parent: 'service_id' };

/** All states of some entities, by id, oldest first; instants are ISO strings (they compare as text). */
class States {
  readonly rows: Row[];
  private readonly byId = new Map<string, Row[]>();

  constructor(rows: Row[]) {
    this.rows = rows;
    for (const r of rows) {
      const list = this.byId.get(r.id as string) ?? [];
      list.push(r);
      this.byId.set(r.id as string, list);
    }
    for (const list of this.byId.values()) list.sort((a, b) => cmp(a.valid_from as string, b.valid_from as string));
  }

  /** The state valid at `t` (valid_from ≤ t < valid_to). */
  at(id: string, t: string): Row | undefined {
    return this.byId.get(id)?.find((s) => validAt(s, t));
  }

  /** The state that ended at `t`. */
  endingAt(id: string, t: string): Row | undefined {
    return this.byId.get(id)?.find((s) => s.valid_to === t);
  }

  startingAt(id: string, t: string): Row | undefined {
    return this.byId.get(id)?.find((s) => s.valid_from === t);
  }

  /** For a label: the state at `t`, else the one that ended then, else the newest known. */
  around(id: string, t: string): Row | undefined {
    return this.at(id, t) ?? this.endingAt(id, t) ?? this.byId.get(id)?.at(-1);
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const validAt = (s: Row, t: string) => (s.valid_from as string) <= t && (s.valid_to == null || t < (s.valid_to as string));

/** The columns whose values differ between two states of one entity. */
function changedFields(before: Row, after: Row): string[] {
  return Object.keys(after).filter((c) => !NOT_A_CHANGE.has(c) && JSON.stringify(before[c]) !== JSON.stringify(after[c]));
}

/**
 * The distinct instants at which the host or a child it owned then began or ended a state, newest
 * first, before `before`, each with the next instant (when that state of the whole ended). The
 * host's deletion is only an end: it has no entry (there is no host as of it).
 */
async function entryInstants(db: Db, organizationId: string, hostId: string, before: string | undefined, limit: number): Promise<Array<{ t: string; next: string | null }>> {
  // Every read names the organization: on a partitioned schema each is one partition.
  const kids = HOST_KINDS.map((k) => `select valid_from, valid_to from ${k.table.spec.table}_history where organization_id = ? and host_id = ?`);
  // A binding belongs to the host while its service does: its boundaries count when the service
  // was the host's at that instant (a start inside a state of the service, an end at or before its end).
  const rows = await db.query<{ t: unknown; next: unknown }>(
    `with spans as (
       select valid_from, valid_to from hosts_history where organization_id = ? and id = ?
       union all ${kids.join(' union all ')}
     ), boundary as (
       select valid_from as t from spans
       union select valid_to from spans where valid_to is not null
       union select b.valid_from from bindings_history b join services_history s on s.organization_id = b.organization_id and s.id = b.service_id
        where b.organization_id = ? and s.organization_id = ? and s.host_id = ? and s.valid_from <= b.valid_from and (s.valid_to is null or b.valid_from < s.valid_to)
       union select b.valid_to from bindings_history b join services_history s on s.organization_id = b.organization_id and s.id = b.service_id
        where b.organization_id = ? and s.organization_id = ? and s.host_id = ? and b.valid_to is not null and s.valid_from < b.valid_to and (s.valid_to is null or b.valid_to <= s.valid_to)
     ), step as (
       select t, lag(t) over (order by t desc) as next from boundary
     )
     select t, next from step
      where t < coalesce(?::timestamptz, 'infinity')
        and exists (select 1 from hosts_history h where h.organization_id = ? and h.id = ? and h.valid_from <= step.t and (h.valid_to is null or step.t < h.valid_to))
      order by t desc limit ?`,
    [organizationId, hostId, ...HOST_KINDS.flatMap(() => [organizationId, hostId]), organizationId, organizationId, hostId,
      organizationId, organizationId, hostId, before ?? null, organizationId, hostId, limit],
  );
  return rows.map((r) => ({ t: isoTimestamp(r.t)!, next: isoTimestamp(r.next) }));
}

/**
 * Every state, in the kind's list order, of the children the host owned at some time in [from, to]
 * (of its services' bindings, for bindings) that overlaps that interval: the states before and after
 * each boundary inside it, the ones of another owner too.
 */
async function childStates(db: Db, organizationId: string, kind: Kind, hostId: string, from: string, to: string): Promise<States> {
  const overlaps = (alias: string) => `${alias}.valid_from <= ?::timestamptz and (${alias}.valid_to is null or ${alias}.valid_to >= ?::timestamptz)`;
  const owned = kind.parent === 'host_id'
    ? `t.id in (select o.id from ${kind.table.spec.table}_history o where o.organization_id = ? and o.host_id = ? and ${overlaps('o')})`
    : `t.service_id in (select o.id from services_history o where o.organization_id = ? and o.host_id = ? and ${overlaps('o')})`;
  const rows = await db.query(
    `select ${kind.table.spec.columns.map((c) => `t.${c}`).join(', ')}, t.valid_to from ${kind.table.states} t
      where t.organization_id = ? and ${owned} and ${overlaps('t')}
      order by ${kind.order}, t.valid_from`,
    [organizationId, organizationId, hostId, to, from, to, from],
  );
  return new States(rows.map((r) => kind.table.toResponse(r)));
}

interface Change {
  entity: Entity;
  id: string;
  action: Action;
  fields?: string[];
  label: string;
  previous_label?: string;
  other_host_id?: string;
}

/** Labels a person recognises a child by. */
function labeller(all: Record<Kind['entity'], States>) {
  const portLabel = (p: Row | undefined) => (p ? `${p.number}/${String(p.protocol).toLowerCase()}` : '?');
  return (entity: Kind['entity'], s: Row, t: string): string => {
    switch (entity) {
      case 'ip_address': return String(s.ip_address);
      case 'port': return portLabel(s);
      case 'service': return String(s.name);
      case 'interface': return String(s.if_name ?? s.if_descr ?? (s.if_index != null ? `ifIndex ${s.if_index}` : s.mac_address ?? s.id));
      case 'binding': {
        const service = all.service.around(s.service_id as string, t)?.name ?? '?';
        const address = s.ip_address_id ? String(all.ip_address.around(s.ip_address_id as string, t)?.ip_address ?? '?') : undefined;
        const target = s.type === 'Port' ? `${portLabel(all.port.around(s.port_id as string, t))}${address ? ` on ${address}` : ''}` : address ?? '?';
        return `${service}: ${target}`;
      }
    }
  };
}

export async function hostHistory(db: Db, scope: Scope, hostId: string, q: { limit?: number; before?: string }): Promise<Row[]> {
  return db.transaction(async (tx) => {
    // Tenancy exactly as the host row's own history: another organization's 404, a network out of scope 403.
    const hostStates = new States(await hostTable.history(tx, scope, hostId));
    const instants = await entryInstants(tx, scope.organizationId, hostId, q.before, q.limit ?? 20);
    if (!instants.length) return [];
    const from = instants.at(-1)!.t;
    const to = instants[0]!.t;
    const loaded = await Promise.all([...HOST_KINDS, BINDINGS].map((k) => childStates(tx, scope.organizationId, k, hostId, from, to)));
    const all = Object.fromEntries([...HOST_KINDS, BINDINGS].map((k, i) => [k.entity, loaded[i]!])) as Record<Kind['entity'], States>;
    const label = labeller(all);
    const network = await tx.one<{ host_expiry_days: number }>(
      `select host_expiry_days from networks where organization_id = ? and id = ?`, [scope.organizationId, hostStates.at(hostId, to)?.network_id ?? null]);
    const expiry = network?.host_expiry_days ?? DEFAULT_HOST_EXPIRY_DAYS;

    // Who owned a child's state at `t`: its host_id, or for a binding the host of its service then
    // (`ending`: the service's state that was valid just before `t`).
    const ownerOf = (kind: Kind, s: Row, t: string, ending: boolean): string | undefined => {
      if (kind.parent === 'host_id') return s.host_id as string;
      const service = ending ? (all.service.endingAt(s.service_id as string, t) ?? all.service.at(s.service_id as string, t)) : all.service.at(s.service_id as string, t);
      return service?.host_id as string | undefined;
    };

    const changesAt = (t: string, host: Row): Change[] => {
      const changes: Change[] = [];
      if (host.valid_from === t) {
        const previous = hostStates.endingAt(hostId, t);
        const fields = previous ? changedFields(previous, host) : [];
        if (!previous) changes.push({ entity: 'host', id: hostId, action: 'created', label: String(host.name) });
        else if (fields.length) changes.push({ entity: 'host', id: hostId, action: 'updated', fields, label: String(host.name), ...(previous.name !== host.name ? { previous_label: String(previous.name) } : {}) });
      }
      for (const kind of [...HOST_KINDS, BINDINGS]) {
        const states = all[kind.entity];
        const found: Change[] = [];
        for (const s of states.rows) {
          const id = s.id as string;
          if (s.valid_from === t && ownerOf(kind, s, t, false) === hostId) {
            const previous = states.endingAt(id, t);
            const previousOwner = previous && ownerOf(kind, previous, t, true);
            const now = label(kind.entity, s, t);
            if (!previous) found.push({ entity: kind.entity, id, action: 'created', label: now });
            else {
              const fields = changedFields(previous, s);
              const before = label(kind.entity, previous, t);
              const moved = previousOwner !== hostId ? { other_host_id: previousOwner } : undefined;
              if (!fields.length && !moved) continue;
              found.push({
                entity: kind.entity, id, action: moved ? 'moved_in' : 'updated', fields, label: now,
                ...(before !== now ? { previous_label: before } : {}), ...moved,
              });
            }
          } else if (s.valid_to === t && ownerOf(kind, s, t, true) === hostId) {
            const next = states.startingAt(id, t);
            const nextOwner = next && ownerOf(kind, next, t, false);
            if (next && nextOwner === hostId) continue; // an update, listed from its new state
            found.push({ entity: kind.entity, id, action: next ? 'moved_out' : 'deleted', label: label(kind.entity, s, t), ...(next ? { other_host_id: nextOwner } : {}) });
          }
        }
        changes.push(...found); // in the kind's list order (ports by number), as the host lists them
      }
      return changes;
    };

    return instants.map(({ t, next }) => {
      const host = hostStates.at(hostId, t)!; // the instants query keeps only instants the host existed at
      const pick = (kind: Kind) => all[kind.entity].rows.filter((s) => validAt(s, t) && s.host_id === hostId);
      const services = pick(HOST_KINDS[2]!);
      const serviceIds = new Set(services.map((s) => s.id as string));
      const bindings = all.binding.rows.filter((b) => validAt(b, t) && serviceIds.has(b.service_id as string));
      return {
        ...host,
        status: hostStatus(host, expiry, new Date(t)), // as it was then
        interfaces: pick(HOST_KINDS[3]!),
        ip_addresses: pick(HOST_KINDS[0]!),
        ports: pick(HOST_KINDS[1]!),
        services: services.map((s) => ({ ...s, bindings: bindings.filter((b) => b.service_id === s.id) })),
        valid_from: t,
        valid_to: next,
        changes: changesAt(t, host),
      };
    });
  }, { snapshot: true });
}
