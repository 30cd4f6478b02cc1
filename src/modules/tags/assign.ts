// Tagging many entities at once (Scanopy's /api/v1/tags/assign…): replace one entity's tags, or add
// or remove one tag on many. Unlike Scanopy, every entity is checked (another organization's is
// 404, one outside the caller's networks 403, a Network needs an Admin), all in one transaction,
// and every change is a state in the entity's history like any other write.
import type { Db } from '../../core/db.js';
import type { HistoryTable } from '../../core/historyTable.js';
import { requireRole, type Scope } from '../../core/scope.js';
import { daemonTable } from '../daemons/table.js';
import { dependencyTable } from '../dependencies/table.js';
import { hostTable } from '../hosts/table.js';
import { networkTable } from '../networks/service.js';
import { serviceTable } from '../services/table.js';
import { subnetTable } from '../subnets/table.js';
import { tagService } from './service.js';

/** The taggable entities by their Scanopy names (`Group` is Scanopy's name for a dependency). */
export const TAGGABLE: Record<string, HistoryTable> = {
  Host: hostTable, Service: serviceTable, Subnet: subnetTable, Network: networkTable, Dependency: dependencyTable, Group: dependencyTable, Daemon: daemonTable,
};

async function retag(db: Db, scope: Scope, entityType: string, ids: string[], change: (tags: string[]) => string[]): Promise<number> {
  if (entityType === 'Network') requireRole(scope, 'Admin');
  const table = TAGGABLE[entityType]!;
  let affected = 0;
  for (const id of ids) {
    const row = await table.get(db, scope, id, undefined, true); // 404 / 403; locked until commit
    const before = (row.tags as string[]) ?? [];
    const after = change(before);
    if (after.length === before.length && after.every((t, i) => t === before[i])) continue;
    await table.update(db, scope, id, { tags: after });
    affected++;
  }
  return affected;
}

export const tagAssignment = {
  /** The entity's tags become exactly `tagIds`. */
  replace(db: Db, scope: Scope, input: { entity_type: string; entity_id: string; tag_ids: string[] }) {
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, input.tag_ids, 'tag_ids');
      await retag(tx, scope, input.entity_type, [input.entity_id], () => input.tag_ids);
      return { entity_type: input.entity_type, entity_id: input.entity_id, tag_ids: input.tag_ids };
    });
  },

  /** Adds (or removes) one tag on each listed entity; answers how many changed. */
  bulk(db: Db, scope: Scope, input: { entity_type: string; entity_ids: string[]; tag_id: string }, op: 'add' | 'remove') {
    return db.transaction(async (tx) => {
      await tagService.assertTagsExist(tx, scope, [input.tag_id], 'tag_id');
      const affected = await retag(tx, scope, input.entity_type, input.entity_ids, (tags) =>
        op === 'add' ? (tags.includes(input.tag_id) ? tags : [...tags, input.tag_id]) : tags.filter((t) => t !== input.tag_id));
      return { affected_count: affected };
    });
  },
};
