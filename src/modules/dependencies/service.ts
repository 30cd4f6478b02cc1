// Dependencies (spec §2.7, §4.3; decisions §6): ordered groupings of services or bindings on one
// network. Members must exist, be visible and be on the dependency's network; a deleted service
// or binding leaves every dependency (database trigger). `source` is Manual and never changes.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { AppError, invalidReference } from '../../core/errors.js';
import { canSeeNetwork, type Scope } from '../../core/scope.js';
import { assertSameId } from '../../http/schemas.js';
import { listNetworkScoped } from '../networks/scopedList.js';
import { networkService } from '../networks/service.js';
import { tagService } from '../tags/service.js';
import { dependencyTable } from './table.js';

export type Members = { type: 'Services'; service_ids: string[] } | { type: 'Bindings'; binding_ids: string[] };

export interface DependencyWrite {
  id?: string; name: string; network_id: string; description: string | null; color: string; dependency_type: string;
  edge_style: string; members: Members; tags: string[]; expected_updated_at?: string | null;
}

const MANUAL = { type: 'Manual' };
const ORDER = { name: 'name', dependency_type: 'dependency_type', created_at: 'created_at', updated_at: 'updated_at' };

/**
 * Every member exists in the caller's organization and is visible (else 400
 * entity_reference_invalid naming it) and is on `networkId` (else 400 entity_network_mismatch).
 * The members are key-share locked, so none can be deleted before this transaction commits
 * (the trigger that removes deleted members then sees the new list).
 */
async function assertMembers(db: Db, scope: Scope, networkId: string, members: Members): Promise<void> {
  const [table, entity, ids, field] = members.type === 'Services'
    ? ['services', 'Service', members.service_ids, 'members.service_ids'] as const
    : ['bindings', 'Binding', members.binding_ids, 'members.binding_ids'] as const;
  if (!ids.length) return;
  const rows = await db.query<{ id: string; network_id: string }>(
    `select id, network_id from ${table} where organization_id = ? and id = any(?::uuid[]) for key share`, [scope.organizationId, ids],
  );
  const networkOf = new Map(rows.map((r) => [r.id, r.network_id]));
  for (const id of ids) {
    const network = networkOf.get(id);
    if (!network || !canSeeNetwork(scope, network)) throw invalidReference(entity, id, field);
    if (network !== networkId) throw new AppError('entity_network_mismatch', { entity, id });
  }
}

/** Only the list of the members' kind is stored. */
const storedMembers = (m: Members): Members =>
  m.type === 'Services' ? { type: 'Services', service_ids: m.service_ids } : { type: 'Bindings', binding_ids: m.binding_ids };

export const dependencyService = {
  list: (db: Db, scope: Scope, q: Record<string, any>) =>
    listNetworkScoped(dependencyTable, db, scope, q, { filters: ['dependency_type'], order: ORDER }),

  get: (db: Db, scope: Scope, id: string, at?: string) => dependencyTable.get(db, scope, id, at),

  async create(db: Db, scope: Scope, input: DependencyWrite) {
    return db.transaction(async (tx) => {
      await networkService.assertWritable(tx, scope, input.network_id);
      await tagService.assertTagsExist(tx, scope, input.tags);
      await assertMembers(tx, scope, input.network_id, input.members);
      const id = randomUUID(); // a body id is ignored
      return dependencyTable.insert(tx, {
        id, organization_id: scope.organizationId, network_id: input.network_id, name: input.name, description: input.description,
        color: input.color, dependency_type: input.dependency_type, edge_style: input.edge_style, members: storedMembers(input.members),
        tags: input.tags, source: MANUAL,
      });
    });
  },

  async update(db: Db, scope: Scope, id: string, input: DependencyWrite) {
    assertSameId(id, input.id);
    return db.transaction(async (tx) => {
      const current = await dependencyTable.get(tx, scope, id);
      if (input.network_id !== current.network_id) {
        throw new AppError('validation_failed', { field: 'network_id', reason: 'must be the dependency’s network (a dependency does not move)' });
      }
      await tagService.assertTagsExist(tx, scope, input.tags);
      await assertMembers(tx, scope, input.network_id, input.members);
      return dependencyTable.update(tx, scope, id, {
        name: input.name, description: input.description, color: input.color, dependency_type: input.dependency_type,
        edge_style: input.edge_style, members: storedMembers(input.members), tags: input.tags,
      }, input.expected_updated_at);
    });
  },

  remove: (db: Db, scope: Scope, id: string) => dependencyTable.remove(db, scope, id),

  history: (db: Db, scope: Scope, id: string) => dependencyTable.history(db, scope, id),
};
