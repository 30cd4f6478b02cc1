import { randomUUID } from 'node:crypto';
import type { Db } from '../../core/db.js';
import { invalidReference } from '../../core/errors.js';
import { HistoryTable } from '../../core/historyTable.js';
import type { Scope } from '../../core/scope.js';
import { Page } from '../../http/envelope.js';
import { assertSameId, orderTerms } from '../../http/schemas.js';

export const tagTable = new HistoryTable({
  table: 'tags',
  entity: 'Tag',
  columns: ['id', 'organization_id', 'name', 'description', 'color', 'is_application', 'lineage_id', 'created_at', 'updated_at', 'valid_from'],
});

/** Tables whose rows carry a `tags uuid[]` column; a deleted tag is removed from all of them (a test checks the list against the schema). */
export const TAGGED_TABLES: string[] = ['networks', 'subnets', 'hosts', 'services', 'dependencies', 'daemons'];

export interface TagInput {
  id?: string;
  name: string;
  description: string | null;
  color: string;
  is_application: boolean;
  expected_updated_at?: string | null;
}

const ORDER_COLUMNS = { name: 'name', color: 'color', created_at: 'created_at', updated_at: 'updated_at', is_application: 'is_application' };

export const tagService = {
  async list(db: Db, scope: Scope, q: Record<string, any>) {
    const { rows, total } = await tagTable.list(db, scope, {
      ids: q.ids, order: orderTerms(q, ORDER_COLUMNS, 'created_at'),
      limit: q.limit,
      offset: q.offset,
      at: q.at,
    });
    return Page.of(rows, total, q.limit, q.offset);
  },

  async get(db: Db, scope: Scope, id: string, at?: string) {
    return tagTable.get(db, scope, id, at);
  },

  async create(db: Db, scope: Scope, input: TagInput) {
    return tagTable.insert(db, {
      id: randomUUID(), organization_id: scope.organizationId, name: input.name,
      description: input.description, color: input.color, is_application: input.is_application,
    });
  },

  async update(db: Db, scope: Scope, id: string, input: TagInput) {
    assertSameId(id, input.id);
    return tagTable.update(
      db, scope, id,
      { name: input.name, description: input.description, color: input.color, is_application: input.is_application },
      input.expected_updated_at,
    );
  },

  async remove(db: Db, scope: Scope, id: string) {
    await db.transaction(async (tx) => {
      await tagTable.remove(tx, scope, id);
      for (const table of TAGGED_TABLES) {
        await tx.query(`update ${table} set tags = array_remove(tags, ?) where organization_id = ? and tags @> array[?]::uuid[]`, [id, scope.organizationId, id]);
      }
    });
  },

  async history(db: Db, scope: Scope, id: string) {
    return tagTable.history(db, scope, id);
  },

  /** Every id must be a tag of the caller's organization (400 naming the first offender otherwise). */
  async assertTagsExist(db: Db, scope: Scope, ids: string[], field = 'tags'): Promise<void> {
    if (!ids.length) return;
    // `for key share`: a tag deleted meanwhile waits for this write, then removes itself from the row
    // (tags arrays have no foreign key to do it).
    const found = await db.query<{ id: string }>(`select id from tags where organization_id = ? and id = any(?::uuid[]) for key share`, [scope.organizationId, ids]);
    const known = new Set(found.map((r) => r.id));
    const missing = ids.find((id) => !known.has(id));
    if (missing) throw invalidReference('Tag', missing, field);
  },
};
