// What the host-children endpoints (/ip-addresses, /ports, /services, /bindings, /interfaces) share:
// resolving and locking the parent named in a body, and keeping positions 0..n-1. Creates ignore a
// body `id` (the server assigns it): answering differently for an id taken in another organization
// would reveal that it exists (decisions §1). (Candidates for src/modules/hosts/ once that module takes them.)
import Joi from 'joi';
import type { Db } from '../../core/db.js';
import { AppError, accessDenied, invalidReference } from '../../core/errors.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { at, SERVER_OWNED, timestamp, uuid } from '../../http/schemas.js';

export interface ParentRef {
  id: string;
  organization_id: string;
  network_id: string;
  /** For a service: its host. */
  host_id?: string;
}

/**
 * The parent a new child names in its body (`host_id`, `service_id`): unknown or another
 * organization's is 400 entity_reference_invalid, on a network outside the caller's scope 403.
 * The host row is locked, so writes to one host's children (and host PUTs) are serialised.
 */
export async function referencedHost(db: Db, scope: Scope, hostId: string, field = 'host_id'): Promise<ParentRef> {
  const host = await db.one<ParentRef>(`select id, organization_id, network_id from hosts where id = ? and organization_id = ?`, [hostId, scope.organizationId]);
  if (!host) throw invalidReference('Host', hostId, field);
  if (!canSeeNetwork(scope, host.network_id)) throw accessDenied('Host', hostId);
  await lockHost(db, scope.organizationId, hostId);
  return host;
}

/** The service a new binding names; its host is locked as for `referencedHost`. */
export async function referencedService(db: Db, scope: Scope, serviceId: string, field = 'service_id'): Promise<Required<ParentRef>> {
  const service = await db.one<Required<ParentRef>>(
    `select id, organization_id, network_id, host_id from services where id = ? and organization_id = ?`, [serviceId, scope.organizationId],
  );
  if (!service) throw invalidReference('Service', serviceId, field);
  if (!canSeeNetwork(scope, service.network_id)) throw accessDenied('Service', serviceId);
  await lockHost(db, scope.organizationId, service.host_id);
  return service;
}

/** Serialises the writers of one host's children (the host PUT locks the same row). */
export async function lockHost(db: Db, organizationId: string, hostId: string): Promise<void> {
  await db.query(`select id from hosts where organization_id = ? and id = ? for update`, [organizationId, hostId]);
}

/** The children of one owner (a host's addresses, ports, services): the organization named too, so a partitioned table reads one partition. */
export interface ChildOwner { column: string; id: string; organizationId: string }

/** A child keeps its parent: a PUT may echo `host_id` / `service_id` back, but not change it. */
export function assertSameParent(field: string, stored: unknown, given: string | undefined, what: string): void {
  if (given !== undefined && given.toLowerCase() !== stored) {
    throw new AppError('validation_failed', { field, reason: `${what} does not move to another ${field.replace(/_id$/, '')}` });
  }
}

/**
 * Positions of the children of one owner stay 0..n-1 in list order. Puts child `id` at
 * `position` (undefined: where it is, or last when new), renumbers its siblings where needed
 * (one statement) and answers the position to write on the child itself. An index outside
 * 0..n-1 (0..n for a new child) is 400.
 */
export async function placeAt(
  db: Db, table: string, owner: ChildOwner, id: string, position: number | undefined,
): Promise<number> {
  const rows = await db.query<{ id: string }>(`select id from ${table} where organization_id = ? and ${owner.column} = ? order by position, id`, [owner.organizationId, owner.id]);
  const current = rows.findIndex((r) => r.id === id);
  const others = rows.filter((r) => r.id !== id).map((r) => r.id);
  const index = position ?? (current >= 0 ? current : others.length);
  if (index > others.length) {
    throw new AppError('validation_failed', { field: 'position', reason: `must be between 0 and ${others.length}` });
  }
  others.splice(index, 0, id); // every child of the owner, in order, this one at `index`
  await db.query(
    `update ${table} t set position = x.position from jsonb_to_recordset(?::jsonb) as x(id uuid, position int)
     where t.organization_id = ? and t.id = x.id and t.id <> ? and t.position <> x.position`,
    [JSON.stringify(others.map((x, i) => ({ id: x, position: i }))), owner.organizationId, id],
  );
  return index;
}

/** After a delete: the remaining children of the owner are renumbered 0..n-1. */
export async function compactPositions(db: Db, table: string, owner: ChildOwner): Promise<void> {
  const rows = await db.query<{ id: string }>(`select id from ${table} where organization_id = ? and ${owner.column} = ? order by position, id`, [owner.organizationId, owner.id]);
  await db.query(
    `update ${table} t set position = x.position from jsonb_to_recordset(?::jsonb) as x(id uuid, position int)
     where t.organization_id = ? and t.id = x.id and t.position <> x.position`,
    [JSON.stringify(rows.map((r, i) => ({ id: r.id, position: i }))), owner.organizationId],
  );
}

/** Since when a child discovery follows has not been seen (null: there); read-only. */
export const offlineAt = (what: string) => timestamp().allow(null)
  .description(`Since when the scans that covered it have not seen this ${what} (null: seen by the last one, or never scanned; read-only, from discovery)`);

/** Response fields every host child carries (tenancy, discovery, history). */
export const childResponseFields = () => {
  const ts = () => timestamp().allow(null);
  return {
    id: uuid(), organization_id: uuid(), network_id: uuid(),
    first_discovery_id: uuid().allow(null), last_discovery_id: uuid().allow(null), last_seen_at: ts(),
    lineage_id: uuid().allow(null), created_at: timestamp(), updated_at: timestamp(), valid_from: timestamp(), valid_to: ts(),
  };
};

/** Fields a child body may echo back from a GET: accepted and ignored (decisions §1). */
export const CHILD_IGNORED = [...SERVER_OWNED, 'network_id'];

/** Order fields every child list takes. */
export const TIME_ORDER = { created_at: 'created_at', updated_at: 'updated_at' } as const;

export const childGetQuery = () => Joi.object({ at: at() });
